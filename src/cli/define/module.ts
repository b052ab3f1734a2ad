import { Argument, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { ROLLOUT_POLICIES } from '../../domain/builds/rollout-policies.js';
import { group, lazy, verb, AT_OPTION, PLAN_OPTION, WIDE_OPTION } from '../verbs.js';

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
    .action(lazy(async () => (await import('../module.js')).moduleRegister));
  verb(module, 'list', { summary: 'every module\'s newest definition', example: 'mesh module list', exits: [6, 7] })
    .option('--at-least <seq>', 'wait until the projections have reached this log sequence')
    .option(...WIDE_OPTION)
    .action(lazy(async () => (await import('../module.js')).moduleList));
  verb(module, 'show', { summary: 'one module\'s newest definition, in full', example: ['mesh module show nats --json', 'mesh module show nats --at 1200'], exits: [5, 6, 7] })
    .argument('<name>', 'the module')
    .option('--at-least <seq>', 'wait until the projections have reached this log sequence')
    .option(...AT_OPTION)
    .action(lazy(async () => (await import('../module.js')).moduleShow));
  verb(module, 'moved', { summary: 'its repository and branch moved to COMMIT (what the mesh-git holder\'s pushed says)', example: 'mesh module moved app 3f2c1e9', exits: [3, 4, 5, 6] })
    .argument('<module>', 'the module')
    .argument('<commit>', 'the commit its branch is at now')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../build.js')).moduleMoved));
  verb(module, 'rollout', { summary: 'what a new version of it does to its nodes: roll-out, or record only', example: 'mesh module rollout app record', exits: [3, 4, 5, 6] })
    .argument('<module>', 'the module')
    .addArgument(new Argument('<policy>', 'roll-out or record').choices(ROLLOUT_POLICIES))
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../build.js')).moduleRollout));
  verb(module, 'keep', { summary: 'what its nodes run is intended, though its source moved or its newest build failed', example: 'mesh module keep app --reason "v2 waits for the schema change"', exits: [3, 4, 5, 6] })
    .argument('<module>', 'the module')
    .requiredOption('--reason <text>', 'why what runs is kept')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../build.js')).moduleKeep));
  verb(module, 'deploy', { summary: 'roll out a version the mesh built and recorded (under the record policy)', example: ['mesh module deploy app sha256:3f2c1e9a04b7', 'mesh module deploy app sha256:3f2c1e9a04b7 --plan'], exits: [3, 4, 5, 6] })
    .argument('<module>', 'the module')
    .argument('<version>', 'the version\'s artifact digest, or a unique prefix of it, as mesh graph MODULE prints it')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../build.js')).moduleDeploy));
};
