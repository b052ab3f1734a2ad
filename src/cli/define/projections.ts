import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { MESH_PROJECTION_NAMES } from '../../projections/names.js';
import { group, lazy, verb, WIDE_OPTION } from '../verbs.js';

export const defineProjections = (mesh: CommandUnknownOpts): void => {
  const projections = group(mesh, 'projections', 'the tables the log is folded into, for reads');
  verb(projections, 'status', { summary: 'each projection\'s version, checkpoint, lag and stall; exits 1 unless all serve, caught up', example: 'mesh projections status', exits: [1, 6] })
    .option(...WIDE_OPTION)
    .action(lazy(async () => (await import('../projections.js')).projectionsStatusVerb));
  verb(projections, 'rebuild', {
    summary: 'force a blue/green rebuild of projections from seq 1, one after another; each current build serves until its new one has caught up',
    example: 'mesh projections rebuild audit nodes',
    exits: [5, 6, 7],
  })
    .argument('<names...>', `the projections, of: ${MESH_PROJECTION_NAMES.join(', ')}`)
    .action(lazy(async () => (await import('../projections.js')).projectionsRebuildVerb));
};
