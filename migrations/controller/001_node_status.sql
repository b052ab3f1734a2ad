-- The controller's own record of what each node last said and when it was last heard: not a
-- projection of the log (reports and heartbeats are not mesh changes). IF NOT EXISTS: a schema made
-- before its migrations were recorded already has this table, with its rows, and keeps them.
CREATE TABLE IF NOT EXISTS node_status (
  node             text PRIMARY KEY,
  report_sequence  bigint,
  report_digest    text,
  report           jsonb,
  reported_at      timestamptz,
  heartbeat_at     timestamptz
);
