-- From a merge to a version: where each followed branch points, every build, the module versions
-- builds produced, what each module rolls out, and the graph of what each module is built on.
CREATE TABLE source_heads (
  source_key  text   PRIMARY KEY,
  "commit"    text   NOT NULL,
  moved_seq   bigint NOT NULL
);
CREATE TABLE builds (
  build_id            text        PRIMARY KEY,
  module              text        NOT NULL,
  definition_version  integer     NOT NULL,
  "commit"            text        NOT NULL,
  source              jsonb       NOT NULL,
  path                text        NOT NULL,
  recipe              text        NOT NULL,
  output              text        NOT NULL,
  bases               jsonb       NOT NULL,
  register_only       boolean     NOT NULL,
  reason              text        NOT NULL,
  status              text        NOT NULL CHECK (status IN ('submitted', 'succeeded', 'failed')),
  -- the artifact, once it succeeded
  artifact_digest     text,
  -- why it failed and the end of what the recipe printed
  failure             text,
  failure_output      text,
  started_at          timestamptz NOT NULL,
  submitted_seq       bigint      NOT NULL,
  finished_at         timestamptz,
  finished_seq        bigint
);
CREATE INDEX builds_module ON builds (module, submitted_seq);
-- Every version a module was built into; a byte-identical rebuild moves its commit, not its digest.
CREATE TABLE module_versions (
  module           text        NOT NULL,
  artifact_digest  text        NOT NULL,
  "commit"         text        NOT NULL,
  bases            jsonb       NOT NULL,
  build_id         text        NOT NULL,
  built_at         timestamptz NOT NULL,
  built_seq        bigint      NOT NULL,
  PRIMARY KEY (module, artifact_digest)
);
-- Per module: its roll-out policy when an operator set one, and the artifact its nodes are declared to run.
CREATE TABLE module_rollouts (
  module           text PRIMARY KEY,
  policy           text,
  deployed_digest  text
);
-- What each module's newest version was built on: module → base, with the base's artifact.
CREATE TABLE graph_edges (
  source         text NOT NULL,
  target         text NOT NULL,
  kind           text NOT NULL,
  target_digest  text,
  PRIMARY KEY (source, target, kind)
);
-- v2: what an operator kept a module's running version against (mesh module keep): the head and the
-- failed build then, so a later move or failure is a problem again.
CREATE TABLE kept_versions (
  module        text   PRIMARY KEY,
  head          text,
  failed_build  text,
  reason        text   NOT NULL,
  kept_seq      bigint NOT NULL
);
