import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { group, lazy, verb } from '../verbs.js';

export const defineEvents = (mesh: CommandUnknownOpts): void => {
  const events = group(mesh, 'events', 'the events modules emit and consume, across the catalogue');
  verb(events, 'dangling', { summary: 'consumed events no registered module emits (a fault), and emitted events nobody consumes', example: 'mesh events dangling', exits: [6, 7] })
    .option('--at-least <seq>', 'wait until the projections have reached this log sequence')
    .action(lazy(async () => (await import('../events.js')).danglingCommand));
};
