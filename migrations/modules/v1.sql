-- The catalogue: every module's newest definition, and every definition version it ever had.
CREATE TABLE modules (
  name                text        PRIMARY KEY,
  definition_version  integer     NOT NULL,
  digest              text        NOT NULL,
  manifest            jsonb       NOT NULL,
  registered_at       timestamptz NOT NULL,
  registered_seq      bigint      NOT NULL
);
CREATE TABLE module_definitions (
  module              text        NOT NULL,
  definition_version  integer     NOT NULL,
  digest              text        NOT NULL,
  manifest            jsonb       NOT NULL,
  actor               text        NOT NULL,
  registered_at       timestamptz NOT NULL,
  registered_seq      bigint      NOT NULL,
  PRIMARY KEY (module, definition_version)
);
