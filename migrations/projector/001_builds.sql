-- The projection engine's own tables, in its control schema (search_path is set to it).
-- One row per build: a projection at one version and generation, in a schema of its own.
CREATE TABLE builds (
  id               bigserial   PRIMARY KEY,
  projection       text        NOT NULL,
  version          integer     NOT NULL,
  generation       integer     NOT NULL,
  schema_name      text        NOT NULL UNIQUE,
  -- building: filling its shadow schema; serving: what the read views show; retired: being dropped.
  status           text        NOT NULL CHECK (status IN ('building', 'serving', 'retired')),
  tables           text[]      NOT NULL DEFAULT '{}',
  -- The LOG sequence of the last commit applied, and that commit's time.
  checkpoint       bigint      NOT NULL DEFAULT 0,
  checkpoint_time  timestamptz,
  events_applied   bigint      NOT NULL DEFAULT 0,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  serving_since    timestamptz,
  -- A stall: the commit this build cannot apply, and why. Cleared when it is applied.
  stalled_seq      bigint,
  stalled_type     text,
  stalled_sqlstate text,
  stalled_error    text,
  stalled_since    timestamptz,
  stall_attempts   integer     NOT NULL DEFAULT 0,
  UNIQUE (projection, version, generation)
);
CREATE UNIQUE INDEX builds_one_serving ON builds (projection) WHERE status = 'serving';
CREATE UNIQUE INDEX builds_one_building ON builds (projection, version) WHERE status = 'building';
