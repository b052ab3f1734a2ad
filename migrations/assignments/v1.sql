-- Which module runs on which node, at which definition version, with the operator's pins, values
-- and placements, and how each of its requirements was answered when it was assigned.
CREATE TABLE assignments (
  node                text        NOT NULL,
  module              text        NOT NULL,
  definition_version  integer     NOT NULL,
  pins                jsonb       NOT NULL,
  "values"            jsonb       NOT NULL,
  placements          jsonb       NOT NULL,
  assigned_at         timestamptz NOT NULL,
  assigned_seq        bigint      NOT NULL,
  PRIMARY KEY (node, module)
);
CREATE INDEX assignments_module ON assignments (module);
CREATE TABLE assignment_resolutions (
  node         text    NOT NULL,
  module       text    NOT NULL,
  -- the order the resolver answered them in
  position     integer NOT NULL,
  requirement  text    NOT NULL,
  contract     text    NOT NULL,
  provider     text    NOT NULL,
  answer       jsonb   NOT NULL,
  PRIMARY KEY (node, module, position)
);
