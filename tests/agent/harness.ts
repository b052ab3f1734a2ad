import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { declarationHeaders } from '../../src/adapters/declaration-signature.js';
import { newIdentity, type Identity } from '../../src/adapters/identity.js';
import { connectNats } from '../../src/adapters/nats/connect.js';
import { assertControlStreams, eventsStreamName, nodesStreamConfig, type ControlStreamNames } from '../../src/adapters/nats/control-streams.js';
import { Agent } from '../../src/agent/agent.js';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import type { ResourceRecord } from '../../src/agent/records.js';
import type { AgentTimings } from '../../src/agent/settings.js';
import { StateFolder } from '../../src/agent/state-folder.js';
import { meshHome, projectRoot } from '../../src/config.js';
import { isAlive } from '../../src/dev/processes.js';
import { declarationSubject, type Declaration, type DeclaredAssignment, type Resource } from '../../src/domain/declarations/declaration.js';
import { reportSchema, reportSubject, type Report } from '../../src/domain/reports/report.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';

// Real agents against real NATS, each test on streams, subjects and folders of its own. Declared
// paths live under the test's own folder in .mesh/tmp; every process an agent started is killed
// when the test ends, whatever state it ended in.

/** Patient enough for a loaded machine, quick enough that a test of restarts takes seconds. */
export const FAST: Partial<AgentTimings> = {
  resyncMs: 500,
  heartbeatMs: 1_000,
  restartBackoffMs: 100,
  restartBackoffMaxMs: 2_000,
  stableMs: 60_000,
  stopGraceMs: 3_000,
  stepRetryMs: 600_000,
  reportRetryMs: 200,
  reportRetryMaxMs: 1_000,
  adoptedPollMs: 200,
};

export const waitFor = async <T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 45_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

type Of<K extends Resource['kind']> = Extract<Resource, { kind: K }>;

export const processResource = (module: string, name: string, run: string[], extra: Partial<Of<'process'>> = {}): Of<'process'> => ({
  key: `${module}/${name}`,
  module,
  kind: 'process',
  run,
  user: null,
  env: {},
  envFiles: [],
  restartOn: [],
  after: [],
  ...extra,
});

export const stepResource = (module: string, name: string, command: string[], extra: Partial<Of<'run-once'>> = {}): Of<'run-once'> => ({
  key: `${module}/${name}`,
  module,
  kind: 'run-once',
  prepare: true,
  image: null,
  command,
  user: null,
  env: {},
  envFiles: [],
  mounts: [],
  reads: [],
  after: [],
  ...extra,
});

export const directoryResource = (module: string, name: string, path: string, mode = '0755'): Of<'directory'> => ({ key: `${module}/${name}`, module, kind: 'directory', path, owner: null, mode });

export const fileResource = (module: string, name: string, path: string, content: string, mode = '0644'): Of<'file'> => ({ key: `${module}/${name}`, module, kind: 'file', path, content, mode });

export const assignment = (module: string, resources: Resource[], definitionVersion = 1): DeclaredAssignment => ({ module, definitionVersion, artifact: null, seats: [], resources });

export interface AgentProcess {
  child: ChildProcess;
  output: () => string;
  /** signals it and waits for its exit code */
  stop: (signal: NodeJS.Signals) => Promise<number | null>;
}

export interface AgentTest {
  node: string;
  names: ControlStreamNames;
  /** the test's folder: declared paths and state folders go under it */
  root: string;
  url: string;
  nc: NatsConnection;
  /** the key the test's declarations are signed with, as the controller's would be; the agents are given its public half */
  controllerKey: Identity;
  js: JetStreamClient;
  jsm: JetStreamManager;
  declaration(sequence: number, assignments: DeclaredAssignment[]): Declaration;
  publish(declaration: Declaration): Promise<void>;
  startAgent(options?: { stateDir?: string }): Promise<Agent>;
  /** `mesh agent` in a process of its own, as an operator runs it */
  runAgentCli(): AgentProcess;
  stateDir: string;
  reports(): Promise<Report[]>;
  /** the newest report that satisfies `test` (waits for it) */
  reportWhere(what: string, test: (report: Report) => boolean): Promise<Report>;
  records(stateDir?: string): ResourceRecord[];
  pidOf(key: string, stateDir?: string): number | undefined;
  /** the pid, once the agent has started it */
  runningPid(key: string, stateDir?: string): Promise<number>;
  /** the pid of the process that replaced `previous` under `key` */
  waitForNewPid(key: string, previous: number, stateDir?: string): Promise<number>;
  /** a directory the agent's processes should be reaped from, e.g. a second agent's state */
  alsoClean(stateDir: string): void;
  cleanup(): Promise<void>;
}

/** `withoutControl`: only NODES exists, as when an agent comes up before the control plane has asserted CONTROL. */
export const openAgentTest = async (options: { url?: string; timings?: Partial<AgentTimings>; withoutControl?: boolean } = {}): Promise<AgentTest> => {
  const id = uniqueName('a');
  const names: ControlStreamNames = { prefix: id, nodes: `NODES_${id}`, control: `CONTROL_${id}` };
  const node = uniqueName('node');
  const root = join(meshHome(), 'tmp', `agent-${id}`);
  mkdirSync(root, { recursive: true });
  const url = options.url ?? testNatsUrl();
  const nc = await connectNats(url, { name: `test-${id}`, persistent: true });
  const jsm = await jetstreamManager(nc);
  if (options.withoutControl) await jsm.streams.add(nodesStreamConfig(names));
  else await assertControlStreams(jsm, names);
  const js = jetstream(nc);
  const controllerKey = newIdentity();
  const agents: Agent[] = [];
  const cliAgents: AgentProcess[] = [];
  const stateDirs = new Set([join(root, 'state')]);

  const records = (stateDir = join(root, 'state')): ResourceRecord[] => new StateFolder(stateDir).loadRecords();
  const pidOf = (key: string, stateDir?: string): number | undefined => {
    const record = records(stateDir).find((r) => r.key === key);
    return record?.kind === 'process' ? record.running?.pid : undefined;
  };
  const reports = async (): Promise<Report[]> => {
    const info = await jsm.streams.info(names.control);
    const found: Report[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const message = await jsm.streams.getMessage(names.control, { seq }).catch(() => null);
      if (message?.subject === reportSubject(node, names.prefix)) found.push(reportSchema.parse(message.json()));
    }
    return found;
  };

  return {
    node,
    names,
    root,
    url,
    nc,
    js,
    jsm,
    controllerKey,
    stateDir: join(root, 'state'),
    declaration: (sequence, assignments) => ({
      node,
      sequence,
      digest: `sha256:${createHash('sha256').update(JSON.stringify({ node, assignments })).digest('hex')}`,
      derivedFromSeq: sequence,
      assignments,
    }),
    // Retried: right after a server restart the test's own connection may still be reconnecting.
    publish: (declaration) =>
      waitFor(`declaration ${declaration.sequence} published`, () => {
        const body = new TextEncoder().encode(JSON.stringify(declaration));
        return js
          .publish(declarationSubject(node, names.prefix), body, { headers: declarationHeaders(controllerKey, body), timeout: 5_000 })
          .then(() => true as const)
          .catch(() => undefined);
      }).then(() => undefined),
    startAgent: async ({ stateDir = join(root, 'state') } = {}) => {
      stateDirs.add(stateDir);
      const agent = new Agent({ node, natsUrl: url, stateDir, controllerKey: controllerKey.publicKey, wire: { prefix: names.prefix, nodesStream: names.nodes }, timings: { ...FAST, ...options.timings } });
      agents.push(agent);
      await agent.start();
      return agent;
    },
    runAgentCli: () => {
      const child = spawn(process.execPath, [join(projectRoot, 'bin', 'mesh.js'), 'agent', '--node', node, '--state', join(root, 'state'), '--controller-key', controllerKey.publicKey], {
        cwd: projectRoot,
        env: { ...process.env, MESH_NATS_URL: url, MESH_SUBJECT_PREFIX: names.prefix, MESH_NODES_STREAM: names.nodes },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      const agent: AgentProcess = {
        child,
        output: () => output,
        stop: async (signal) => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return exited;
        },
      };
      cliAgents.push(agent);
      return agent;
    },
    reports,
    reportWhere: (what, test) =>
      waitFor(what, async () => {
        const all = await reports();
        return [...all].reverse().find(test);
      }),
    records,
    pidOf,
    runningPid: (key, stateDir) => waitFor(`a running process for ${key}`, () => {
      const pid = pidOf(key, stateDir);
      return pid !== undefined && isAlive(pid) ? pid : undefined;
    }),
    waitForNewPid: (key, previous, stateDir) => waitFor(`a new process for ${key}`, () => {
      const pid = pidOf(key, stateDir);
      return pid !== undefined && pid !== previous && isAlive(pid) ? pid : undefined;
    }),
    alsoClean: (stateDir) => void stateDirs.add(stateDir),
    cleanup: async () => {
      for (const agent of agents) await agent.stop().catch(() => undefined);
      for (const agent of cliAgents) await agent.stop('SIGKILL');
      for (const dir of stateDirs) stopRecordedProcesses(dir, 'SIGKILL');
      await jsm.streams.delete(names.nodes).catch(() => undefined);
      await jsm.streams.delete(names.control).catch(() => undefined);
      await jsm.streams.delete(eventsStreamName(names)).catch(() => undefined);
      await nc.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
};
