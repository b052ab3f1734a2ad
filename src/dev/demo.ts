import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { newEnrolmentToken } from '../adapters/enrolment-tokens.js';
import type { NatsConnection } from '@nats-io/nats-core';
import { sendSignedCommand } from '../adapters/command-client.js';
import { UnavailableError } from '../errors.js';
import { projectRoot } from '../config.js';
import type { MeshService } from '../controller/mesh-service.js';
import type { MeshCommand } from '../domain/mesh/commands.js';
import { stopRecordedProcesses } from '../agent/left-running.js';
import { backgroundStatus, processFiles, startBackground, stopBackground } from './background.js';
import { assignmentOf, isAssigned } from '../domain/assignments/state.js';
import { nodeNamed } from '../domain/nodes/state.js';

// A whole mesh on this machine, raised the way an operator would: the fixture catalogue
// registered, two nodes whose agents join with tokens, and modules that really run — a greeter
// holding a seat, a caller requiring the greeter's provision, the local bus holding mesh-broker,
// the vault holding mesh-vault, a PostgreSQL provider on alpha and a guestbook on beta that logs
// in to it with the login the vault made for it. Every step is a signed command to the controller,
// and every step can be taken again.

export const DEMO_NODES = ['alpha', 'beta'] as const;
export const CATALOGUE = ['nats', 'distribution', 'vault', 'postgres', 'gitea', 'builder', 'catalogue', 'route-proxy', 'audit-logger', 'telegram-sender', 'showcase', 'local-bus', 'greeter', 'caller', 'local-vault', 'local-postgres', 'guestbook'];

export interface DemoOptions {
  dir: string;
  nc: NatsConnection;
  /** the mesh as this process folds it, read to learn what is already done */
  mesh: MeshService;
  natsPort: number;
  subjectPrefix: string;
  operatorKeyFile: string;
  /** the controller's public key: its agents apply only declarations signed with it */
  controllerKey: string;
  ports: { greeter: number; caller: number; postgres: number };
  env: Record<string, string>;
  say: (line: string) => void;
}

const agentName = (node: string): string => `agent-${node}`;
const agentState = (dir: string, node: string): string => join(dir, 'agents', node);

export const demoAgentsStatus = (dir: string) =>
  DEMO_NODES.map((node) => ({ node, ...backgroundStatus(dir, agentName(node), agentState(dir, node)) }));

export const raiseDemo = async (options: DemoOptions): Promise<{ greeterUrl: string; callerUrl: string; postgres: string }> => {
  const reads = options.mesh;
  // The controller was just started: until it serves its tools nobody answers, and the command,
  // never received, is sent again under the same id (for up to a minute).
  const run = async (command: MeshCommand) => {
    const commandId = randomUUID();
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        return await sendSignedCommand(options.nc, options, command, commandId);
      } catch (error) {
        if (!(error instanceof UnavailableError && /^no controller answers/.test(error.message)) || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  };

  for (const node of DEMO_NODES) {
    const state = await reads.current();
    if (!nodeNamed(state.nodes, node)) await run({ type: 'add-node', node, root: join(options.dir, 'nodes', node), address: '127.0.0.1' });
    const enrolled = Boolean(nodeNamed((await reads.current()).nodes, node)?.publicKey);
    // The controller's public key, also to an agent that enrolled before declarations were signed
    // (its enrolment kept none): it is the stack's own, so nothing is taken on trust here.
    const args = ['agent', '--node', node, '--state', agentState(options.dir, node), '--controller-key', options.controllerKey];
    if (!enrolled && !existsSync(join(agentState(options.dir, node), 'enrolment.json'))) {
      const { tokenId, token, verifier, publicKey } = newEnrolmentToken();
      await run({ type: 'issue-enrolment-token', tokenId, verifier, publicKey, node, expiresAt: new Date(Date.now() + 10 * 60_000).toISOString() });
      // By file, never on the command line: the agent removes it once it has enrolled.
      const tokenFile = join(agentState(options.dir, node), 'enrolment-token');
      mkdirSync(dirname(tokenFile), { recursive: true });
      writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
      args.push('--token-file', tokenFile);
    }
    const agent = await startBackground({ name: agentName(node), dir: options.dir, args, env: options.env, marker: agentState(options.dir, node) });
    options.say(agent.started ? `agent for node ${node} started (pid ${agent.pid}, log ${processFiles(options.dir, agentName(node)).logFile})` : `agent for node ${node} already running (pid ${agent.pid})`);
  }

  // Registered while the agents boot and enrol (seconds each on a busy machine), not before.
  let registered = 0;
  for (const name of CATALOGUE) {
    const manifest = JSON.parse(readFileSync(join(projectRoot, 'fixtures', 'modules', `${name}.json`), 'utf8')) as unknown;
    const result = await run({ type: 'register-module', manifest });
    if (result.events.length > 0) registered++;
  }
  options.say(registered > 0 ? `registered ${registered} modules of the fixture catalogue` : 'the fixture catalogue is registered');

  const assignments: { module: string; node: string; hold: string[]; values: Record<string, string> }[] = [
    { module: 'local-bus', node: 'alpha', hold: ['mesh-broker'], values: { 'nats-port': String(options.natsPort) } },
    { module: 'greeter', node: 'alpha', hold: ['front-desk'], values: { port: String(options.ports.greeter), greeting: 'hello from alpha, through the mesh' } },
    { module: 'caller', node: 'beta', hold: [], values: { port: String(options.ports.caller) } },
    { module: 'local-vault', node: 'alpha', hold: ['mesh-vault'], values: {} },
    { module: 'local-postgres', node: 'alpha', hold: [], values: { port: String(options.ports.postgres) } },
    { module: 'guestbook', node: 'beta', hold: [], values: {} },
  ];
  for (const a of assignments) {
    if (isAssigned((await reads.current()).assignments, a)) continue;
    await run({ type: 'assign', module: a.module, node: a.node, hold: a.hold, pins: {}, values: a.values, placements: {} });
    options.say(`assigned ${a.module} to ${a.node}${a.hold.length > 0 ? `, holding ${a.hold.join(', ')}` : ''}`);
  }
  // The ports the log holds: an `up` with other ports than the first keeps the mesh as it was told.
  const state = await reads.current();
  const portOf = (node: string, module: string, fallback: number) => assignmentOf(state.assignments, { node, module })?.values.port ?? fallback;
  return { greeterUrl: `http://127.0.0.1:${portOf('alpha', 'greeter', options.ports.greeter)}/`, callerUrl: `http://127.0.0.1:${portOf('beta', 'caller', options.ports.caller)}/`, postgres: `127.0.0.1:${portOf('alpha', 'local-postgres', options.ports.postgres)}` };
};

/** Stops the demo's agents and what they started; the log keeps the mesh, so the next `up` brings it back. */
export const stopDemo = async (dir: string, say: (line: string) => void): Promise<void> => {
  for (const node of DEMO_NODES) {
    const stopped = await stopBackground(dir, agentName(node), agentState(dir, node));
    const processes = stopRecordedProcesses(agentState(dir, node), 'SIGTERM');
    if (stopped || processes > 0) say(`node ${node}: agent stopped${processes > 0 ? `, and the ${processes} processes it ran` : ''}`);
  }
};
