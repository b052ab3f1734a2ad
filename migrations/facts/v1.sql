-- What the control plane stated about the mesh rather than decided: a declaration it could not
-- compose, a projection that stalled, and later what nodes report. One row per fact event.
CREATE TABLE facts (
  seq          bigint      NOT NULL,
  event_index  integer     NOT NULL,
  type         text        NOT NULL,
  -- the node and module the fact is about, when it is about one
  node         text,
  module       text,
  data         jsonb       NOT NULL,
  time         timestamptz NOT NULL,
  PRIMARY KEY (seq, event_index)
);
CREATE INDEX facts_type ON facts (type, seq);
CREATE INDEX facts_node ON facts (node, seq);
