-- The machines of the mesh (node.added, node.enrolled) and the enrolment tokens made for them.
CREATE TABLE nodes (
  name         text        PRIMARY KEY,
  -- where the node keeps modules' directories
  root         text        NOT NULL,
  -- the host or IP address other nodes reach it at; NULL: its name resolves
  address      text,
  -- the agent's public key (tweetnacl box, base64) once the node has enrolled
  public_key   text,
  enrolled_at  timestamptz,
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
  issued_seq   bigint      NOT NULL
);
