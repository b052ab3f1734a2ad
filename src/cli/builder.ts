import { pino } from 'pino';
import { loadConfig } from '../config.js';
import { connectNats } from '../adapters/nats/connect.js';
import { Builder } from '../builder/builder.js';
import { parseFlags, wholeNumberFlag } from './flags.js';

// `mesh builder`: a process that can hold mesh-build-machine, in the foreground. It takes jobs from
// the seat's queue until stopped; JSON logs on stdout.

export const builderCommand = async (args: string[]): Promise<number> => {
  const { values } = parseFlags(args, { json: { type: 'boolean', default: false }, work: { type: 'string' }, 'heartbeat-ms': { type: 'string' }, name: { type: 'string' } });
  const config = loadConfig();
  const logger = pino({ base: { component: 'builder', mesh: config.meshName } });
  const nc = await connectNats(config.natsUrl, { name: 'mesh-builder', persistent: true });
  const builder = new Builder(nc, {
    prefix: config.subjectPrefix,
    heartbeatMs: wholeNumberFlag('heartbeat-ms', values['heartbeat-ms']) ?? 5_000,
    logger,
    ...(values.work ? { workDir: values.work } : {}),
    ...(values.name ? { name: values.name } : {}),
  });
  builder.start();
  logger.info({ nats: config.natsUrl }, 'builder started');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await builder.stop();
  await nc.close();
  return 0;
};
