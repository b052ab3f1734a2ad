import { readFileSync } from 'node:fs';
import { NotFoundError, ValidationError } from '../errors.js';
import { withMesh, printResult } from './mesh-session.js';
import { output, reportError, table } from './output.js';
import { atLeastFlag, withReads } from './reads.js';
import { moduleNames, readCatalogue, readModule } from '../projections/mesh/modules.js';
import { atFlag, withMeshAt } from './at.js';
import { moduleShowAt } from './at-reads.js';

// mesh module register <manifest.json> [--source SRC] | list | show NAME | moved NAME COMMIT | rollout NAME POLICY | keep NAME --reason TEXT | deploy NAME VERSION

/** `--source https://…` is an external repository as given; `--source mesh-git:owner/repo[@ref]` is one on a seat. */
export const sourceFlag = (value: string): Record<string, string> => {
  const onSeat = /^([a-z][a-z0-9-]*):([A-Za-z0-9._-]+\/[A-Za-z0-9._-]+)(?:@(.+))?$/.exec(value);
  if (onSeat && !value.includes('://')) return { seat: onSeat[1] ?? '', repository: onSeat[2] ?? '', ...(onSeat[3] ? { ref: onSeat[3] } : {}) };
  if (/^[a-z+]+:\/\//.test(value) || value.startsWith('git@')) return { url: value };
  throw new ValidationError(`--source "${value}" is neither a URL nor SEAT:OWNER/REPOSITORY[@REF]`, { field: '--source' });
};

const readManifest = (file: string): unknown => {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ValidationError(`cannot read manifest ${file}: ${(error as Error).message}`, { field: 'manifest' });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ValidationError(`manifest ${file} is not JSON: ${(error as Error).message}`, { field: 'manifest' });
  }
};


export const moduleRegister = (files: string[], values: { json?: true; source?: string; path?: string; commandId?: string; plan?: true }): Promise<number> => {
  const out = output(values.json ?? false);
  if (files.length > 1 && (values.source || values.path || values.commandId)) {
    const field = values.source ? '--source' : values.path ? '--path' : '--command-id';
    throw new ValidationError(`--source, --path and --command-id belong to one manifest: register it on its own`, { field });
  }
  const manifests = files.map((file) => readManifest(file) as Record<string, unknown>);
  if (values.source) {
    const manifest = manifests[0] as Record<string, unknown>;
    const source = manifest.source && typeof manifest.source === 'object' ? (manifest.source as Record<string, unknown>) : {};
    manifest.source = { ...sourceFlag(values.source), ...(typeof source.path === 'string' ? { path: source.path } : {}) };
  }
  if (values.path !== undefined) {
    const manifest = manifests[0] as Record<string, unknown>;
    if (!manifest.source || typeof manifest.source !== 'object') {
      throw new ValidationError(`--path ${values.path} is a folder of a repository, and the manifest names no source: give --source too`, { field: '--path' });
    }
    manifest.source = { ...(manifest.source as Record<string, unknown>), path: values.path };
  }
  // Several manifests are registered in turn, each its own command: one refused does not stop the rest.
  return withMesh(async ({ mesh, metadata }) => {
    let exitCode = 0;
    for (const manifest of manifests) {
      try {
        printResult(out, await mesh.execute({ type: 'register-module', manifest }, metadata(values.commandId)));
      } catch (error) {
        if (manifests.length === 1) throw error;
        exitCode ||= reportError(error, out.json);
      }
    }
    return exitCode;
  }, { plan: values.plan });
};

export const moduleList = (values: { json?: true; atLeast?: string; output?: string }): Promise<number> => {
  const out = output(values.json ?? false, values.output);
  return withReads(['modules'], { atLeast: atLeastFlag(values.atLeast) }, async (session) => {
    const rows = await readCatalogue(session);
    if (out.json) out.data(rows.map((m) => ({ module: m.name, definitionVersion: m.definition_version, digest: m.digest, provides: m.provides })));
    else table(out, ['MODULE', 'DEFINITION', 'PROVIDES'], rows.map((m) => [m.name, `v${m.definition_version}`, m.provides.join(', ') || '(nothing)']));
    return 0;
  });
};

export const moduleShow = (name: string, values: { json?: true; atLeast?: string; at?: string }): Promise<number> => {
  const out = output(values.json ?? false);
  const at = atFlag(values.at);
  if (at) return withMeshAt(at, async (mesh) => moduleShowAt(out, mesh, name));
  return withReads(['modules'], { atLeast: atLeastFlag(values.atLeast) }, async (session) => {
    const module = await readModule(session, name);
    if (!module) {
      const known = await moduleNames(session);
      throw new NotFoundError(`no module ${name} is registered (registered: ${known.join(', ') || 'none'})`, { field: 'module', module: name });
    }
    if (out.json) out.data(module);
    else out.line(JSON.stringify(module, null, 2));
    return 0;
  });
};
