import { pino } from 'pino';
import { loadConfig } from '../config.js';
import { connectNats, identityFromEnv } from '../adapters/nats/connect.js';
import { ValidationError } from '../errors.js';
import { Builder } from '../builder/builder.js';
import { wholeNumberFlag } from './flags.js';

// `mesh builder`: a process that can hold mesh-build-machine, in the foreground. It takes jobs from
// the seat's queue until stopped; JSON logs on stdout.


export const builderCommand = async (values: { work?: string; heartbeatMs?: string; name?: string }): Promise<number> => {
  const config = loadConfig();
  // A builder is a module holding mesh-build-machine: it speaks as that module's bus user, whose
  // key its node hands it (MESH_BUS_KEY), never anonymously.
  if (!identityFromEnv()) {
    throw new ValidationError('mesh builder speaks on the bus as the builder module assigned to its node: set MESH_BUS_KEY to that identity\'s key file (and MESH_BUS_INBOX to its inbox prefix)', {
      field: 'MESH_BUS_KEY',
    });
  }
  const logger = pino({ base: { component: 'builder', mesh: config.meshName } });
  const nc = await connectNats(config.natsUrl, { name: 'mesh-builder', persistent: true });
  const builder = new Builder(nc, {
    prefix: config.subjectPrefix,
    heartbeatMs: wholeNumberFlag('heartbeat-ms', values.heartbeatMs, { min: 100, max: 30_000, why: 'often enough to tell the server inside the build queue\'s 60-second ack wait, not so often it is all the builder does' }) ?? 5_000,
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
