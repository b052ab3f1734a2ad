import { readFileSync } from 'node:fs';
import { ValidationError } from '../errors.js';
import { parseFlags } from './flags.js';
import { moduleKeepCommand, moduleMovedCommand, moduleRolloutCommand } from './build.js';
import { withMesh, printResult } from './mesh-session.js';
import { output, reportError } from './output.js';
import { atLeastFlag, withReads } from './reads.js';
import { moduleNames, readCatalogue, readModule } from '../projections/mesh/modules.js';

// mesh module register <manifest.json> [--source SRC] | list | show NAME | moved NAME COMMIT | rollout NAME POLICY | keep NAME --reason TEXT

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

export const moduleCommand = async (args: string[]): Promise<number> => {
  const { values, positionals } = parseFlags(
    args,
    { json: { type: 'boolean', default: false }, 'at-least': { type: 'string' }, source: { type: 'string' }, reason: { type: 'string' }, 'command-id': { type: 'string' } },
    200,
  );
  const out = output(values.json ?? false);
  const [sub, argument, third] = positionals;
  switch (sub) {
    case 'register': {
      if (!argument) throw new ValidationError('mesh module register needs a manifest file: mesh module register <manifest.json> [more.json …]', { field: 'manifest' });
      const files = positionals.slice(1);
      if (files.length > 1 && (values.source || values['command-id'])) {
        throw new ValidationError('--source and --command-id belong to one manifest: register it on its own', { field: values.source ? '--source' : '--command-id' });
      }
      const manifests = files.map((file) => readManifest(file) as Record<string, unknown>);
      if (values.source) {
        const manifest = manifests[0] as Record<string, unknown>;
        const source = manifest.source && typeof manifest.source === 'object' ? (manifest.source as Record<string, unknown>) : {};
        manifest.source = { ...sourceFlag(values.source), ...(typeof source.path === 'string' ? { path: source.path } : {}) };
      }
      // Several manifests are registered in turn, each its own command: one refused does not stop the rest.
      return withMesh(async ({ mesh, metadata }) => {
        let exitCode = 0;
        for (const manifest of manifests) {
          try {
            printResult(out, await mesh.execute({ type: 'register-module', manifest }, metadata(values['command-id'])));
          } catch (error) {
            if (manifests.length === 1) throw error;
            exitCode ||= reportError(error, out.json);
          }
        }
        return exitCode;
      });
    }
    case 'list':
      return withReads(['modules'], { atLeast: atLeastFlag(values['at-least']) }, async (session) => {
        const rows = await readCatalogue(session);
        if (out.json) out.data(rows.map((m) => ({ module: m.name, definitionVersion: m.definition_version, digest: m.digest, provides: m.provides })));
        else for (const m of rows) out.line(`${m.name.padEnd(24)} v${String(m.definition_version).padEnd(4)} provides ${m.provides.join(', ') || '-'}`);
        return 0;
      });
    case 'show':
      return withReads(['modules'], { atLeast: atLeastFlag(values['at-least']) }, async (session) => {
        const module = argument ? await readModule(session, argument) : undefined;
        if (!module) {
          const known = await moduleNames(session);
          throw new ValidationError(`no module ${argument ?? ''} is registered (registered: ${known.join(', ') || 'none'})`, { field: 'module' });
        }
        if (out.json) out.data(module);
        else out.line(JSON.stringify(module, null, 2));
        return 0;
      });
    case 'moved':
      return moduleMovedCommand(argument, third, values.json ?? false, values['command-id']);
    case 'rollout':
      return moduleRolloutCommand(argument, third, values.json ?? false, values['command-id']);
    case 'keep':
      return moduleKeepCommand(argument, values.reason, values.json ?? false, values['command-id']);
    default:
      throw new ValidationError(`mesh module needs one of: register, list, show, moved, rollout, keep (got ${sub ?? 'nothing'})`, { field: 'verb' });
  }
};
