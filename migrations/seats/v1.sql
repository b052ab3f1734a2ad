-- The set of seats (the mesh's own and those modules declare), their former names, and who holds
-- each: one holder per seat and scope key (`mesh`, or a node's name for a node-scoped seat).
CREATE TABLE seats (
  id              text    PRIMARY KEY,
  name            text    NOT NULL,
  scope           text    NOT NULL CHECK (scope IN ('mesh', 'node')),
  delivers        text,
  reserved        boolean NOT NULL,
  -- the record that made it a seat
  decided         text    NOT NULL,
  -- 'system' (the mesh's own) or 'module' (declared by definer_module)
  definer         text    NOT NULL CHECK (definer IN ('system', 'module')),
  definer_module  text,
  protocol        jsonb   NOT NULL,
  changed_seq     bigint  NOT NULL
);
CREATE TABLE seat_aliases (
  seat_id   text    NOT NULL,
  -- oldest first, as renames left them
  position  integer NOT NULL,
  alias     text    NOT NULL,
  PRIMARY KEY (seat_id, position)
);
CREATE INDEX seat_aliases_alias ON seat_aliases (alias);
-- A holding may outlive its seat in the set (its declarer dropped it): it is kept, not hidden.
CREATE TABLE holdings (
  seat_id    text   NOT NULL,
  scope_key  text   NOT NULL,
  node       text   NOT NULL,
  module     text   NOT NULL,
  since_seq  bigint NOT NULL,
  PRIMARY KEY (seat_id, scope_key)
);
CREATE INDEX holdings_holder ON holdings (node, module);
