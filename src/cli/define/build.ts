import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { lazy, verb, AT_OPTION, PLAN_OPTION, WIDE_OPTION } from '../verbs.js';

export const defineBuilds = (mesh: CommandUnknownOpts): void => {
  verb(mesh, 'build', { summary: 'submit a build to mesh-build-machine; says what will roll out, and where', example: ['mesh build app', 'mesh build app --register-only'], exits: [3, 4, 5, 6, 7] })
    .argument('<module>', 'the module to build')
    .option('--register-only', 'record the version it builds; roll it out to no node')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(lazy(async () => (await import('../build.js')).buildCommand));
  verb(mesh, 'graph', {
    summary: 'the module graph: each module, its newest version and whether it must be rebuilt',
    example: ['mesh graph', 'mesh graph app', 'mesh graph --reaches base', 'mesh graph --stale', 'mesh graph app --at 1200'],
    exits: [5, 6, 7],
  })
    .argument('[module]', 'one module in full: versions, builds, what it is built on and what stands on it')
    .option('--reaches <module>', 'what a change to this module reaches')
    .option('--stale', 'only what must be rebuilt, and why')
    .option(...AT_OPTION)
    .option(...WIDE_OPTION)
    .action(lazy(async () => (await import('../build.js')).graphCommand));
};
