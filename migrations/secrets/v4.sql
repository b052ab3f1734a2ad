-- The secrets the log names: what each is for, its version and the nodes it goes to. Never a value:
-- the vault alone holds those (docs/architecture.md, "The sealed path of a secret"). v2: the
-- rotation under way, as its events fold it (docs/decisions.md, "Rotating a secret"), and the
-- highest version it ever had. v3: the mesh's own secrets, made at genesis (docs/decisions.md,
-- "The mesh's own first secrets"): their origin, and the holder of mesh-vault they were handed to.
-- v4: a rotation abandoned after its readers were handed the new value unwinds (abandoned, and the
-- readers back on the old value, in its rotation).
CREATE TABLE secrets (
  name        text    PRIMARY KEY,
  purpose     text    NOT NULL,
  version     integer NOT NULL,
  -- node names; for the mesh's own, the keys its genesis file seals it to (controller, operator:<name>)
  recipients  jsonb   NOT NULL,
  changed_seq bigint  NOT NULL,
  highest     integer NOT NULL,
  -- NULL: none under way. Else { from, version, parties, appliers, readers, made, applied, confirmed, startedSeq, abandoned?, reverted? }
  rotation    jsonb,
  -- 'vault': made by the vault for an assignment; 'genesis': the mesh's own
  origin      text    NOT NULL,
  -- the mesh's own: { node, module } of the holder of mesh-vault that keeps it; NULL until handed over
  handed_over jsonb
);
