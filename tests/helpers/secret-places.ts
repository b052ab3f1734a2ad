import { randomBytes } from 'node:crypto';
import { DeliverPolicy, jetstream, RetentionPolicy } from '@nats-io/jetstream';
import type { Subscription } from '@nats-io/nats-core';
import type pg from 'pg';
import { pino } from 'pino';
import { hostKey, nodeIdentity } from '../../src/adapters/enrolment-client.js';
import { Agent } from '../../src/agent/agent.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { MeshView } from '../../src/controller/mesh-view.js';
import { SecretKeeper } from '../../src/controller/secret-keeper.js';
import { tokenVerifier } from '../../src/domain/nodes/enrolment.js';
import type { ProjectorSchemas } from '../../src/projections/control.js';
import { StateFolder } from '../../src/agent/state-folder.js';
import { FAST } from '../agent/harness.js';
import { runMesh } from './cli.js';
import { testNatsUrl } from './log.js';
import type { TestMesh } from './test-mesh.js';
import { openTestVault } from './vault.js';

// Where a secret's value must never be found, and the agents that handle one: what a test of the
// sealed path looks into once every path that handles a secret has run (ADR 0113, design 32 §10).

/** The sealed path of a test mesh: a vault of its own, and the controller's secret keeper asking it for what the assignments need. */
export const startSealedPath = (t: TestMesh) => {
  const vault = openTestVault(t.nc, { prefix: t.names.prefix, controllerKey: t.controllerKey.publicKey });
  const view = new MeshView(t.newLog(), { logger: pino({ level: 'silent' }) });
  view.start();
  const keeper = new SecretKeeper(t.nc, view, new MeshService(t.newLog(), {}, view), { prefix: t.names.prefix, controller: t.controllerKey, actor: 'controller', logger: pino({ level: 'silent' }) });
  keeper.start();
  return {
    vault,
    stop: async () => {
      await keeper.stop();
      await view.stop();
      vault.remove();
    },
  };
};

/** Records `node` as enrolled with the keys its agent made in `stateDir`, as the enrol tool records them. */
export const enrolNode = async (t: Pick<TestMesh, 'run'>, node: string, stateDir: string): Promise<void> => {
  const tokenId = randomBytes(8).toString('hex');
  await t.run({ type: 'issue-enrolment-token', tokenId, verifier: tokenVerifier('s'), node, expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
  await t.run({ type: 'enrol-node', node, tokenId, secret: 's', publicKey: nodeIdentity(stateDir).publicKey, busKey: hostKey(stateDir).publicKey, now: new Date().toISOString() });
};

/** The agent of an enrolled `node`, on the test's bus, its state in `stateDir`, started. */
export const startNodeAgent = async (t: Pick<TestMesh, 'names' | 'controllerKey'>, node: string, stateDir: string): Promise<Agent> => {
  const agent = new Agent({ node, natsUrl: testNatsUrl(), stateDir, controllerKey: t.controllerKey.publicKey, wire: { prefix: t.names.prefix, nodesStream: t.names.nodesStream }, timings: { ...FAST, heartbeatMs: 500 }, logger: pino({ level: 'silent' }) });
  await agent.start();
  return agent;
};

/** An agent for `node`, enrolled with the keys it made in `stateDir`, started. */
export const enrolAndStartAgent = async (t: TestMesh, node: string, stateDir: string): Promise<Agent> => {
  await enrolNode(t, node, stateDir);
  return startNodeAgent(t, node, stateDir);
};

/** A test's node agents by name, each with its state in `stateOf(node)`: enrolled once, stopped and started again as the test needs. */
export const nodeAgents = (t: Pick<TestMesh, 'run' | 'names' | 'controllerKey'>, stateOf: (node: string) => string) => {
  const running = new Map<string, Agent>();
  const stop = async (node: string): Promise<void> => {
    await running.get(node)?.stop();
    running.delete(node);
  };
  return {
    enrol: (node: string) => enrolNode(t, node, stateOf(node)),
    start: async (node: string): Promise<void> => void running.set(node, await startNodeAgent(t, node, stateOf(node))),
    stop,
    stopAll: async (): Promise<void> => {
      for (const node of [...running.keys()]) await stop(node);
    },
  };
};

/** pids of the processes an agent whose state is in `stateDir` records as running. */
export const runningPids = (stateDir: string): number[] => new StateFolder(stateDir).loadRecords().flatMap((r) => (r.kind === 'process' && r.running ? [r.running.pid] : []));

/** `mesh secret status --json`, as an operator reads it. */
export const secretStatus = async (env: Record<string, string>): Promise<{ secret: string; version: number; rotation: { step: string; waitsOn: unknown } | null }[]> => {
  const shown = await runMesh(['secret', 'status', '--json'], env);
  if (shown.code !== 0) throw new Error(`mesh secret status exited ${shown.code}: ${shown.stderr}`);
  return JSON.parse(shown.stdout) as { secret: string; version: number; rotation: { step: string; waitsOn: unknown } | null }[];
};

/** Every message on the mesh's subjects while it runs, core and streams alike, as `subject body`. */
export const listenToTheWire = (t: TestMesh): { heard: string[]; subscription: Subscription } => {
  const heard: string[] = [];
  const subscription = t.nc.subscribe(`${t.names.prefix}.>`, { callback: (error, message) => void (error ?? heard.push(`${message.subject} ${new TextDecoder().decode(message.data)}`)) });
  return { heard, subscription };
};

/** Every message a stream stores now, as `subject body`. */
export const storedMessages = async (t: TestMesh, stream: string): Promise<string[]> => {
  const info = await t.jsm.streams.info(stream).catch(() => undefined);
  if (!info || info.state.messages === 0) return [];
  if (info.config.retention === RetentionPolicy.Workqueue) {
    // A work queue takes no consumer that acks nothing (CONTROL holds reports still waiting): each message is read by its sequence.
    const bodies: string[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const message = await t.jsm.streams.getMessage(stream, { seq }).catch(() => undefined);
      if (message) bodies.push(`${message.subject} ${new TextDecoder().decode(message.data)}`);
    }
    return bodies;
  }
  const consumer = await jetstream(t.nc).consumers.get(stream, { deliver_policy: DeliverPolicy.All });
  const bodies: string[] = [];
  const iterator = await consumer.consume();
  for await (const message of iterator) {
    bodies.push(`${message.subject} ${new TextDecoder().decode(message.data)}`);
    if (message.info.pending === 0) break;
  }
  iterator.stop();
  return bodies;
};

/** Every row of every table of the projections' schemas, as `schema.table {row}`. */
export const projectionRows = async (pool: pg.Pool, schemas: ProjectorSchemas): Promise<string[]> => {
  const { rows: tables } = await pool.query<{ schemaname: string; tablename: string }>(`SELECT schemaname, tablename FROM pg_tables WHERE schemaname = $1 OR schemaname = $2 OR schemaname LIKE $3`, [schemas.control, schemas.read, `${schemas.control}\\_%`]);
  const rows: string[] = [];
  for (const { schemaname, tablename } of tables) {
    const { rows: found } = await pool.query(`SELECT * FROM "${schemaname}"."${tablename}"`);
    rows.push(...found.map((row) => `${schemaname}.${tablename} ${JSON.stringify(row)}`));
  }
  return rows;
};

/** Each planted value found in each place, as `<what> in <place>`: the empty list is the answer wanted. */
export const plantedFound = (places: Record<string, string[]>, planted: Record<string, string>): string[] =>
  Object.entries(places).flatMap(([place, texts]) => Object.entries(planted).filter(([, value]) => texts.some((text) => text.includes(value))).map(([what]) => `${what} in ${place}`));
