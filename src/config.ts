import { existsSync, readFileSync } from 'node:fs';
import { userInfo, hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clusterSizeFrom, streamReplicas } from './adapters/nats/replicas.js';

// Configuration comes from the environment, falling back to what `mesh dev up` recorded, falling
// back to the local stack's default addresses: `npx mesh dev up` then any verb works with no flags.

export const projectRoot = resolve(fileURLToPath(new URL('../', import.meta.url)));

/** The one git-ignored folder that holds every server's data: the dev stack, the test stack, scratch servers. */
export const meshHome = (env: NodeJS.ProcessEnv = process.env): string =>
  resolve(env.MESH_HOME ?? join(projectRoot, '.mesh'));

export const devStackDir = (env: NodeJS.ProcessEnv = process.env): string =>
  resolve(env.MESH_DEV_DIR ?? join(meshHome(env), 'dev'));

export const DEFAULT_PORTS = { nats: 14222, postgres: 15432, http: 18080, natsCluster: 14240 } as const;

/** Where a stack keeps its PostgreSQL password files (src/adapters/database-logins.ts). */
export const stackSecretsDir = (stackDir: string): string => join(stackDir, 'secrets');

/** The mesh's own first secrets, sealed at genesis to the controller's key and the first operator's (docs/decisions.md, "The mesh's own first secrets"). */
export const stackGenesisSecretsFile = (stackDir: string): string => join(stackDir, 'genesis-secrets.json');

export interface StackAddresses {
  natsUrl: string;
  /** the PostgreSQL server, with no login: each process adds its role (`databaseUrlFor`) */
  databaseUrl: string;
  /** the controller's page and API, once it serves them */
  httpPort?: number;
  /** how many nats-servers the bus has (MESH_NATS_CLUSTER_SIZE) */
  natsClusterSize?: number;
}

export const stackFile = (dir: string): string => join(dir, 'stack.json');

const recordedAddresses = (dir: string): Partial<StackAddresses> => {
  const file = stackFile(dir);
  if (!existsSync(file)) return {};
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<StackAddresses>;
    return parsed;
  } catch {
    return {};
  }
};

export interface MeshConfig extends StackAddresses {
  meshName: string;
  logStream: string;
  logSubjectPrefix: string;
  /** prefix of every other mesh subject (declarations, reports): `mesh` */
  subjectPrefix: string;
  nodesStream: string;
  controlStream: string;
  actor: string;
  /** where the controller serves its page and API */
  httpHost: string;
  httpPort: number;
  /** the operator key the CLI signs commands with */
  operatorKeyFile: string;
  /** the controller's own key: it signs every commit and is the controller's identity on the bus */
  controllerKeyFile: string;
  /** the local stack's PostgreSQL password files, one per role */
  secretsDir: string;
  /** the mesh's own first secrets, sealed at genesis: the controller hands them to the vault from here */
  genesisSecretsFile: string;
  /** copies of each of the control plane's streams: 3 on a cluster of three or more servers, else 1 */
  replicas: number;
}

export const loadConfig = (env: NodeJS.ProcessEnv = process.env): MeshConfig => {
  const recorded = recordedAddresses(devStackDir(env));
  const natsClusterSize = clusterSizeFrom(env.MESH_NATS_CLUSTER_SIZE ?? recorded.natsClusterSize);
  return {
    natsClusterSize,
    replicas: streamReplicas(natsClusterSize),
    natsUrl: env.MESH_NATS_URL ?? recorded.natsUrl ?? `nats://127.0.0.1:${DEFAULT_PORTS.nats}`,
    databaseUrl: env.MESH_DATABASE_URL ?? recorded.databaseUrl ?? `postgres://127.0.0.1:${DEFAULT_PORTS.postgres}/mesh`,
    meshName: env.MESH_NAME ?? 'local',
    logStream: env.MESH_LOG_STREAM ?? 'LOG',
    logSubjectPrefix: env.MESH_LOG_SUBJECT_PREFIX ?? 'mesh.log',
    subjectPrefix: env.MESH_SUBJECT_PREFIX ?? 'mesh',
    nodesStream: env.MESH_NODES_STREAM ?? 'NODES',
    controlStream: env.MESH_CONTROL_STREAM ?? 'CONTROL',
    actor: env.MESH_ACTOR ?? `operator:${safeUser()}@${hostname()}`,
    httpHost: env.MESH_HTTP_HOST ?? '127.0.0.1',
    httpPort: Number(env.MESH_HTTP_PORT ?? recorded.httpPort ?? DEFAULT_PORTS.http),
    operatorKeyFile: env.MESH_OPERATOR_KEY ?? join(devStackDir(env), 'operator.key'),
    controllerKeyFile: env.MESH_CONTROLLER_KEY ?? join(devStackDir(env), 'controller.key'),
    secretsDir: stackSecretsDir(devStackDir(env)),
    genesisSecretsFile: env.MESH_GENESIS_SECRETS ?? stackGenesisSecretsFile(devStackDir(env)),
  };
};

const safeUser = (): string => {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
};
