import type { MeshEvent, StoredMeshEvent } from '../../domain/registry.js';
import { defineProjection, migrationSql, type ProjectionDefinition, type ProjectionTx } from '../projection.js';

// A mesh projection folds a run of events the way `evolveMesh` folds them, over the rows they
// touch: `open` reads those rows, `apply` changes them in memory one event after another, `save`
// writes what changed. One event alone goes the same way, so the live path and a rebuild write
// the same rows by construction.

export interface Folding<Batch> {
  name: string;
  version: number;
  /** The event types it handles; every other type only moves the checkpoint and never reaches `open` or `apply`. */
  types: readonly string[];
  open: (events: readonly StoredMeshEvent[], tx: ProjectionTx) => Promise<Batch>;
  apply: (batch: Batch, event: StoredMeshEvent) => void;
  save: (batch: Batch, tx: ProjectionTx) => Promise<void>;
}

export const foldingProjection = <Batch>(folding: Folding<Batch>): ProjectionDefinition<MeshEvent> => {
  const fold = async (events: readonly StoredMeshEvent[], tx: ProjectionTx): Promise<void> => {
    const batch = await folding.open(events, tx);
    for (const event of events) folding.apply(batch, event);
    await folding.save(batch, tx);
  };
  return defineProjection<MeshEvent>({
    name: folding.name,
    version: folding.version,
    schemaSql: migrationSql(folding.name, folding.version),
    handlers: Object.fromEntries(folding.types.map((type) => [type, (event: StoredMeshEvent, tx: ProjectionTx) => fold([event], tx)])),
    applyMany: fold,
  });
};
