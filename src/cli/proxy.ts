import { existsSync, readFileSync } from 'node:fs';
import { pino } from 'pino';
import { loadConfig } from '../config.js';
import { moduleBusIdentitySchema, type ModuleBusIdentity } from '../domain/bus/module-identity.js';
import { ValidationError } from '../errors.js';
import { routesFileBeside } from '../modules/proxy/routes-file.js';
import { runProxy } from '../modules/proxy/serve.js';

// `mesh proxy serve`: the holder of mesh-proxy, in the foreground (the local-proxy module runs it
// on its node). It speaks on the bus as that module (MESH_BUS_KEY: the identity file its node
// places), hands back the public names the routes file asks for, and serves HTTP from the file.

const portFlag = (value: string): number => {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new ValidationError(`--port "${value}" is not a port (1 to 65535)`, { field: '--port', value });
  return port;
};

/** MESH_BUS_KEY as a module's placed identity file: who the proxy is, and where its routes file is beside it. */
const moduleIdentity = (file: string | undefined): ModuleBusIdentity => {
  const why = "mesh proxy serve speaks on the bus as the module holding mesh-proxy: set MESH_BUS_KEY to that module's identity file (${bus.credential})";
  if (!file) throw new ValidationError(why, { field: 'MESH_BUS_KEY' });
  if (!existsSync(file)) throw new ValidationError(`MESH_BUS_KEY names ${file}, which is not there: ${why}`, { field: 'MESH_BUS_KEY' });
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ValidationError(`MESH_BUS_KEY names ${file}, which is not JSON (${(error as Error).message}): ${why}`, { field: 'MESH_BUS_KEY' });
  }
  const identity = moduleBusIdentitySchema.safeParse(parsed);
  if (!identity.success) throw new ValidationError(`MESH_BUS_KEY names ${file}, which is not a module's identity file: ${why}`, { field: 'MESH_BUS_KEY' });
  return identity.data;
};


export const proxyServe = async (values: { port: string; host: string; routes?: string }): Promise<number> => {
  const port = portFlag(values.port);
  const file = process.env.MESH_BUS_KEY;
  const identity = moduleIdentity(file);
  const config = loadConfig();
  const logger = pino({ base: { component: 'proxy', module: `${identity.node}/${identity.module}` } });
  const running = await runProxy({ natsUrl: config.natsUrl, prefix: config.subjectPrefix, identity, routesFile: values.routes ?? routesFileBeside(file ?? ''), host: values.host, port, logger });
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await running.stop();
  return 0;
};
