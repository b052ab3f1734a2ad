-- What each node holds now and why, as its last fact.held for each module says: one row per held
-- resource, gone when a later fact.held no longer names it. `since_*` is where the resource was
-- first stated held (kept while it stays held, even if its reason changes); `stated_seq` is the
-- fact that last stated it.
CREATE TABLE node_holds (
  node        text        NOT NULL,
  module      text        NOT NULL,
  resource    text        NOT NULL,
  kind        text        NOT NULL,
  -- exactly as the node gave it (a node may give none)
  reason      text,
  since_seq   bigint      NOT NULL,
  since_time  timestamptz NOT NULL,
  stated_seq  bigint      NOT NULL,
  PRIMARY KEY (node, module, resource)
);
