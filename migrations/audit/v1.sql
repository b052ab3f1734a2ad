-- The audit index of the log: one row per event, where it stands and who caused it.
-- Its data stays in the log (`mesh log --since SEQ` prints it).
CREATE TABLE audit (
  seq            bigint      NOT NULL,
  event_index    integer     NOT NULL,
  event_id       text        NOT NULL,
  type           text        NOT NULL,
  aggregate      text        NOT NULL,
  version        integer     NOT NULL,
  actor          text        NOT NULL,
  command_id     text        NOT NULL,
  causation_id   text        NOT NULL,
  correlation_id text        NOT NULL,
  time           timestamptz NOT NULL,
  PRIMARY KEY (seq, event_index)
);
CREATE INDEX audit_aggregate ON audit (aggregate, version);
CREATE INDEX audit_correlation ON audit (correlation_id);
