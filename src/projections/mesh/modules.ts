import type { Manifest } from '../../domain/catalogue/manifest.js';
import { foldingProjection } from './folding.js';
import type { ReadViews } from './read-views.js';
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

/** Every module that follows a source, with it, in the order the modules were first registered. */
export const readModuleSources = async ({ db, view }: ReadViews): Promise<{ module: string; source: NonNullable<Manifest['source']> }[]> =>
  (
    await db.query<{ module: string; source: NonNullable<Manifest['source']> }>(
      `SELECT m.name AS module, m.manifest->'source' AS source FROM ${view('modules')} m
        WHERE jsonb_typeof(m.manifest->'source') = 'object'
        ORDER BY (SELECT min(d.registered_seq) FROM ${view('module_definitions')} d WHERE d.module = m.name), m.name`,
    )
  ).rows;

/** The catalogue: each module's newest definition version and digest, and what it provides, by name. */
export const readCatalogue = async ({ db, view }: ReadViews): Promise<{ name: string; definition_version: number; digest: string; provides: string[] }[]> =>
  (
    await db.query<{ name: string; definition_version: number; digest: string; provides: string[] }>(
      `SELECT name, definition_version, digest, ARRAY(SELECT p->>'provision' FROM jsonb_array_elements(manifest->'provides') p) AS provides FROM ${view('modules')} ORDER BY name`,
    )
  ).rows;

/** One module's newest definition, whole. */
export const readModule = async ({ db, view }: ReadViews, name: string): Promise<{ name: string; definitionVersion: number; digest: string; manifest: unknown } | undefined> =>
  (await db.query<{ name: string; definitionVersion: number; digest: string; manifest: unknown }>(`SELECT name, definition_version AS "definitionVersion", digest, manifest FROM ${view('modules')} WHERE name = $1`, [name])).rows[0];

/** Every registered module's name, in name order. */
export const moduleNames = async ({ db, view }: ReadViews): Promise<string[]> => (await db.query<{ name: string }>(`SELECT name FROM ${view('modules')} ORDER BY name`)).rows.map((r) => r.name);
