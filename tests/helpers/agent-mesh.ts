import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { Agent, type AgentOptions } from '../../src/agent/agent.js';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import { meshHome } from '../../src/config.js';
import type { StoredMeshEvent } from '../../src/domain/registry.js';
import { FAST } from '../agent/harness.js';
import { testNatsUrl } from './log.js';
import { uniqueName } from './names.js';
import { openTestMesh, waitFor, type TestMesh } from './test-mesh.js';
import { enrolAgentNode } from './host-keys.js';

// A mesh of a test's own with its controller and report ingester, and real agents on nodes of
// it, each with a state folder under the test's folder. For the resource kinds tested from the
// manifest to the machine and back.

export interface AgentMesh {
  t: TestMesh;
  /** the test's folder: nodes' roots, agents' state and the machine's files go under it */
  root: string;
  startAgent(node: string, options?: Partial<AgentOptions>): Promise<Agent>;
  stopAgent(agent: Agent): Promise<void>;
  addNode(node: string): Promise<void>;
  assign(module: string, node: string): Promise<unknown>;
  /** every event of one aggregate's family (`fact`, `node`) */
  events(aggregate: string): Promise<StoredMeshEvent[]>;
  /** the log stream's last sequence: a refusal leaves it where it was */
  logHead(): Promise<number>;
  /** the log's last sequence once nothing has been appended for a second (agents' facts settled) */
  quietHead(): Promise<number>;
  /** the newest event of `type` satisfying `test`, once there is one */
  eventWhere(aggregate: string, type: string, test?: (event: StoredMeshEvent) => boolean, timeoutMs?: number): Promise<StoredMeshEvent>;
  close(): Promise<void>;
}

export const openAgentMesh = async (): Promise<AgentMesh> => {
  const root = join(meshHome(), 'tmp', uniqueName('agent-mesh-'));
  mkdirSync(root, { recursive: true });
  const t = await openTestMesh();
  const controller = await t.startController();
  await t.startIngester(controller);
  const agents = new Set<Agent>();
  const stateDirs = new Set<string>();
  const enrolled = new Set<string>();
  const events = async (aggregate: string): Promise<StoredMeshEvent[]> => {
    const found: StoredMeshEvent[] = [];
    for await (const event of t.log.read({ aggregate })) found.push(event);
    return found;
  };
  return {
    t,
    root,
    startAgent: async (node, options = {}) => {
      const stateDir = join(root, 'agents', node);
      // A report counts only when its node signed it with the key it enrolled: enrolled once, with its agent's keys.
      if (!enrolled.has(node) && !options.enrol) await enrolAgentNode(t, node, options.stateDir ?? stateDir);
      enrolled.add(node);
      stateDirs.add(stateDir);
      const agent = new Agent({ node, natsUrl: testNatsUrl(), stateDir, controllerKey: t.controllerKey.publicKey, wire: { prefix: t.names.prefix, nodesStream: t.names.nodesStream }, timings: { ...FAST, heartbeatMs: 300 }, logger: pino({ level: 'silent' }), ...options });
      await agent.start();
      agents.add(agent);
      return agent;
    },
    stopAgent: async (agent) => {
      agents.delete(agent);
      await agent.stop();
    },
    addNode: async (node) => void (await t.run({ type: 'add-node', node, root: join(root, 'nodes', node), address: '127.0.0.1' })),
    assign: (module, node) => t.run({ type: 'assign', module, node, hold: [], pins: {}, values: {}, placements: {} }),
    events,
    logHead: async () => (await t.jsm.streams.info(t.names.logStream)).state.last_seq,
    quietHead: async () => {
      const head = async (): Promise<number> => (await t.jsm.streams.info(t.names.logStream)).state.last_seq;
      for (let last = await head(); ; ) {
        await new Promise((r) => setTimeout(r, 1_000));
        const now = await head();
        if (now === last) return now;
        last = now;
      }
    },
    eventWhere: (aggregate, type, test = () => true, timeoutMs) =>
      waitFor(`${type} on ${aggregate}`, async () => [...(await events(aggregate))].reverse().find((e) => e.type === type && test(e)), timeoutMs),
    close: async () => {
      for (const agent of agents) await agent.stop();
      for (const dir of stateDirs) stopRecordedProcesses(dir, 'SIGKILL');
      await t.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
};
