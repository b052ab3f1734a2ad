-- The machines of the mesh (node.added, node.enrolled, node.cordoned, node.uncordoned, node.removed)
-- and the enrolment tokens made for them. v2: a node's cordon and its removal; a token retired with
-- the node it was made for or spent by.
CREATE TABLE nodes (
  name         text        PRIMARY KEY,
  -- where the node keeps modules' directories
  root         text        NOT NULL,
  -- the host or IP address other nodes reach it at; NULL: its name resolves
  address      text,
  -- the agent's public key (tweetnacl box, base64) once the node has enrolled
  public_key   text,
  enrolled_at  timestamptz,
  -- takes no new assignment; what it runs keeps running
  cordoned     boolean     NOT NULL,
  -- the LOG sequence and time it was removed at; NULL: it is in the mesh. Added again, it is a new machine.
  removed_seq  bigint,
  removed_at   timestamptz,
  -- the LOG sequence of the last event that changed this row
  changed_seq  bigint      NOT NULL
);
-- A token's verifier (the hash of its secret) stays in the log: only the decider that spends it needs it.
CREATE TABLE enrolment_tokens (
  token_id     text        PRIMARY KEY,
  -- the one node it may enrol, or NULL for any
  node         text,
  expires_at   text        NOT NULL,
  spent_by     text,
  -- the removed node it was made for or spent by: it enrols nobody
  retired_with text,
  issued_seq   bigint      NOT NULL
);
CREATE INDEX enrolment_tokens_node ON enrolment_tokens (node);
CREATE INDEX enrolment_tokens_spent_by ON enrolment_tokens (spent_by);
