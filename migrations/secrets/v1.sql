-- The secrets the log names: what each is for, its version and the nodes it goes to. Never a value:
-- the vault alone holds those (docs/architecture.md, "The sealed path of a secret").
CREATE TABLE secrets (
  name        text    PRIMARY KEY,
  purpose     text    NOT NULL,
  version     integer NOT NULL,
  recipients  jsonb   NOT NULL,
  changed_seq bigint  NOT NULL
);
