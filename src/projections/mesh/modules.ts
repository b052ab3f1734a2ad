import { foldingProjection } from './folding.js';
import { RowImage } from './rows.js';

// `modules` (each module's newest definition, as evolveMesh keeps it) and `module_definitions`
// (every version the log holds). What modules were built into is the `builds` projection.

interface Batch {
  modules: RowImage<Record<string, unknown>>;
  definitions: RowImage<Record<string, unknown>>;
}

export const modulesProjection = foldingProjection<Batch>({
  name: 'modules',
  version: 1,
  types: ['module.registered'],
  // Registering states the whole definition: nothing needs reading first.
  open: async () => ({ modules: new RowImage('modules', ['name']), definitions: new RowImage('module_definitions', ['module', 'definition_version']) }),
  apply: (batch, event) => {
    if (event.type !== 'module.registered') return;
    const data = event.data;
    const common = { definition_version: data.definitionVersion, digest: data.digest, manifest: data.manifest, registered_at: event.time, registered_seq: event.seq };
    batch.modules.set({ name: data.module, ...common });
    batch.definitions.set({ module: data.module, ...common, actor: event.actor });
  },
  save: async (batch, tx) => {
    await batch.modules.save(tx);
    await batch.definitions.save(tx);
  },
});
