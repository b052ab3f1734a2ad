import { readFileSync } from 'node:fs';
import { Argument, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { NotFoundError, ValidationError } from '../errors.js';
import { ROLLOUT_POLICIES } from '../domain/builds/events.js';
import { moduleDeploy, moduleKeep, moduleMoved, moduleRollout } from './build.js';
import { withMesh, printResult, PLAN_OPTION } from './mesh-session.js';
import { output, reportError, table } from './output.js';
import { group, run, verb, WIDE_OPTION } from './verbs.js';
import { atLeastFlag, withReads } from './reads.js';
import { moduleNames, readCatalogue, readModule } from '../projections/mesh/modules.js';
import { AT_OPTION, atFlag, withMeshAt } from './at.js';
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

export const defineModule = (mesh: CommandUnknownOpts): void => {
  const module = group(mesh, 'module', 'the catalogue: modules, their definitions and what their new versions do');
  verb(module, 'register', {
    summary: 'register a module\'s definition (a new version when it changed); every problem refused at once',
    example: ['mesh module register fixtures/modules/nats.json', 'mesh module register app.json --source mesh-git:ada/app@main', 'mesh module register app.json --plan'],
    exits: [3, 4, 6],
  })
    .argument('<manifest...>', 'manifest files (JSON); several are registered in turn, each its own command')
    .option('--source <url-or-seat>', 'where it is built from: a URL, or SEAT:OWNER/REPO[@REF] (one manifest only)')
    .option('--path <dir>', 'the folder of the repository the module lives in (one manifest only; issue 132)')
    .option('--command-id <id>', 'a retry with the same id acts once (one manifest only)')
    .option(...PLAN_OPTION)
    .action(run(moduleRegister));
  verb(module, 'list', { summary: 'every module\'s newest definition', example: 'mesh module list', exits: [6, 7] })
    .option('--at-least <seq>', 'wait until the projections have reached this log sequence')
    .option(...WIDE_OPTION)
    .action(run(moduleList));
  verb(module, 'show', { summary: 'one module\'s newest definition, in full', example: ['mesh module show nats --json', 'mesh module show nats --at 1200'], exits: [5, 6, 7] })
    .argument('<name>', 'the module')
    .option('--at-least <seq>', 'wait until the projections have reached this log sequence')
    .option(...AT_OPTION)
    .action(run(moduleShow));
  verb(module, 'moved', { summary: 'its repository and branch moved to COMMIT (what the mesh-git holder\'s pushed says)', example: 'mesh module moved app 3f2c1e9', exits: [3, 4, 5, 6] })
    .argument('<module>', 'the module')
    .argument('<commit>', 'the commit its branch is at now')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(run(moduleMoved));
  verb(module, 'rollout', { summary: 'what a new version of it does to its nodes: roll-out, or record only', example: 'mesh module rollout app record', exits: [3, 4, 5, 6] })
    .argument('<module>', 'the module')
    .addArgument(new Argument('<policy>', 'roll-out or record').choices(ROLLOUT_POLICIES))
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(run(moduleRollout));
  verb(module, 'keep', { summary: 'what its nodes run is intended, though its source moved or its newest build failed', example: 'mesh module keep app --reason "v2 waits for the schema change"', exits: [3, 4, 5, 6] })
    .argument('<module>', 'the module')
    .requiredOption('--reason <text>', 'why what runs is kept')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(run(moduleKeep));
  verb(module, 'deploy', { summary: 'roll out a version the mesh built and recorded (under the record policy)', example: ['mesh module deploy app sha256:3f2c1e9a04b7', 'mesh module deploy app sha256:3f2c1e9a04b7 --plan'], exits: [3, 4, 5, 6] })
    .argument('<module>', 'the module')
    .argument('<version>', 'the version\'s artifact digest, or a unique prefix of it, as mesh graph MODULE prints it')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(run(moduleDeploy));
};

const moduleRegister = (files: string[], values: { json?: true; source?: string; path?: string; commandId?: string; plan?: true }): Promise<number> => {
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

const moduleList = (values: { json?: true; atLeast?: string; output?: string }): Promise<number> => {
  const out = output(values.json ?? false, values.output);
  return withReads(['modules'], { atLeast: atLeastFlag(values.atLeast) }, async (session) => {
    const rows = await readCatalogue(session);
    if (out.json) out.data(rows.map((m) => ({ module: m.name, definitionVersion: m.definition_version, digest: m.digest, provides: m.provides })));
    else table(out, ['MODULE', 'DEFINITION', 'PROVIDES'], rows.map((m) => [m.name, `v${m.definition_version}`, m.provides.join(', ') || '(nothing)']));
    return 0;
  });
};

const moduleShow = (name: string, values: { json?: true; atLeast?: string; at?: string }): Promise<number> => {
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
