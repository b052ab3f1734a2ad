-- The secrets the log names: what each is for, its version and the nodes it goes to. Never a value:
-- the vault alone holds those (docs/architecture.md, "The sealed path of a secret"). v2: the
-- rotation under way, as its events fold it (docs/decisions.md, "Rotating a secret"), and the
-- highest version it ever had.
CREATE TABLE secrets (
  name        text    PRIMARY KEY,
  purpose     text    NOT NULL,
  version     integer NOT NULL,
  recipients  jsonb   NOT NULL,
  changed_seq bigint  NOT NULL,
  highest     integer NOT NULL,
  -- NULL: none under way. Else { from, version, parties, appliers, readers, made, applied, confirmed, startedSeq }
  rotation    jsonb
);
