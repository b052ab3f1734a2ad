import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { group, lazy, verb } from '../verbs.js';

export const defineDev = (mesh: CommandUnknownOpts): void => {
  const dev = group(mesh, 'dev', 'the local stack: NATS, PostgreSQL and the controller on loopback ports');
  verb(dev, 'up', { summary: 'start the local stack (idempotent); with --demo, the demo\'s agents and modules too', example: ['mesh dev up', 'mesh dev up --demo', 'mesh dev up --cluster 3'], exits: [1, 2, 3, 6] })
    .option('--demo', 'raise the demo mesh too, and wait until it does what it was told')
    .option('--cluster <servers>', 'run the bus as a JetStream cluster of this many nats-servers on loopback (1 or 3; the stack keeps what it was first raised with)')
    .action(lazy(async () => (await import('../dev.js')).devUp));
  verb(dev, 'down', { summary: 'stop what `mesh dev up` started; the data stays', example: 'mesh dev down', exits: [] }).action(lazy(async () => (await import('../dev.js')).devDown));
  verb(dev, 'status', { summary: 'describe the stack and the log; exits 1 unless everything is up', example: 'mesh dev status --json', exits: [1] }).action(lazy(async () => (await import('../dev.js')).devStatus));
};
