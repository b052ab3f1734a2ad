import { pino } from 'pino';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { connectNats } from '../adapters/nats/connect.js';
import { enrol, storedEnrolment, tokenBusIdentity } from '../adapters/enrolment-client.js';
import { loadConfig } from '../config.js';
import { Agent, type AgentOptions } from '../agent/agent.js';
import { agentWire, backoff, defaultStateDir } from '../agent/settings.js';
import type { Report } from '../domain/reports/report.js';
import { UnavailableError, ValidationError } from '../errors.js';
import { output, type Output } from './output.js';

// mesh agent --node NAME [--state DIR] [--token-file F]: the node agent, in the foreground until
// SIGINT or SIGTERM. It then exits and leaves everything it started running: restarting an agent
// restarts nothing it runs. A token reaches it by file or by MESH_ENROL_TOKEN, never on its command
// line, where every user of the machine could read it (ps).

const NODE_NAME = /^[A-Za-z0-9_-]+$/;


interface AgentFlags {
  node: string;
  state?: string;
  token?: string;
  tokenFile?: string;
  controllerKey?: string;
  json?: true;
}

export const agentCommand = async (values: AgentFlags, hooks: Pick<AgentOptions, 'enrol'> = {}): Promise<number> => {
  if (values.token !== undefined) {
    throw new ValidationError('--token is refused: a token on the command line is visible to every user of the machine (ps). Put it in a file only you can read and pass --token-file FILE, or set MESH_ENROL_TOKEN', {
      field: '--token',
    });
  }
  const tokenFile = values.tokenFile;
  if (tokenFile !== undefined && !existsSync(tokenFile)) throw new ValidationError(`--token-file ${tokenFile} does not exist`, { field: '--token-file' });
  const token = tokenFile !== undefined ? readFileSync(tokenFile, 'utf8').trim() : process.env.MESH_ENROL_TOKEN?.trim() || undefined;
  const node = values.node;
  if (!NODE_NAME.test(node)) throw new ValidationError(`--node must be letters, digits, - or _ (it is a subject token), not "${node}"`, { field: '--node' });
  const controllerKey = values.controllerKey === undefined ? undefined : controllerKeyOf(values.controllerKey);
  const out = output(values.json ?? false);
  const config = loadConfig();
  const wire = agentWire();
  const stateDir = values.state ?? defaultStateDir(node);
  const logger = pino({ level: process.env.MESH_LOG_LEVEL ?? 'info', base: { component: 'mesh-agent' } }, pino.destination(2));
  const agent = new Agent({
    node,
    natsUrl: config.natsUrl,
    stateDir,
    wire,
    logger,
    ...(token === undefined ? {} : { token }),
    ...(controllerKey === undefined ? {} : { controllerKey }),
    // Joining: a machine with a token that has not enrolled yet spends the token once, as the
    // token's own bus identity; one already enrolled goes on as itself.
    enrol: async (request) => {
      if (!request.token || storedEnrolment(request.stateDir)) return;
      // Until the control plane answers: a controller not up yet, or an answer lost, is asked
      // again with the same token and keys, which it answers again; a refusal ends the agent.
      for (let attempt = 1; ; attempt++) {
        try {
          const nc = await connectNats(request.natsUrl, { name: `mesh-agent-${request.node}-enrol`, identity: tokenBusIdentity(request.token) });
          try {
            await enrol(nc, { node: request.node, token: request.token, stateDir: request.stateDir, prefix: wire.prefix });
          } finally {
            await nc.close();
          }
          break;
        } catch (error) {
          if (!(error instanceof UnavailableError)) throw error;
          logger.warn({ attempt, err: error.message }, 'enrolment not answered; asking again');
          await new Promise((resolve) => setTimeout(resolve, backoff(attempt, 500, 10_000)));
        }
      }
      out.line(`node ${request.node} enrolled: its keys stay in ${request.stateDir}`);
      // A spent token is worth nothing, but a file of it is not left lying about.
      if (tokenFile !== undefined) rmSync(tokenFile, { force: true });
    },
    ...hooks,
    onReport: (report) => printReport(out, report),
  });
  await agent.start();
  out.line(`agent for node ${node}: state in ${stateDir}; declarations from ${wire.prefix}.node.${node}.declare (${wire.nodesStream}) at ${config.natsUrl}`);
  out.line('stop with Ctrl-C: what the agent started keeps running');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await agent.stop();
  return 0;
};

const ED25519_PUBLIC_KEY = /^[A-Za-z0-9+/]{43}=$/;

/**
 * --controller-key: a public key, or a file holding one — the key itself as text, or a key file
 * whose publicKey is read (the controller's own, as `mesh vault` takes it; a copy of its public
 * half is enough, and the better thing to put on a node).
 */
const controllerKeyOf = (flag: string): string => {
  if (ED25519_PUBLIC_KEY.test(flag)) return flag;
  if (!existsSync(flag)) throw new ValidationError(`--controller-key "${flag}" is neither an ed25519 public key (base64) nor a file`, { field: '--controller-key' });
  const text = readFileSync(flag, 'utf8').trim();
  if (ED25519_PUBLIC_KEY.test(text)) return text;
  let publicKey: unknown;
  try {
    publicKey = (JSON.parse(text) as { publicKey?: unknown }).publicKey;
  } catch {
    publicKey = undefined;
  }
  if (typeof publicKey === 'string' && ED25519_PUBLIC_KEY.test(publicKey)) return publicKey;
  throw new ValidationError(`--controller-key ${flag} holds no ed25519 public key: give the key (base64), a file of it, or a key file with a publicKey`, { field: '--controller-key' });
};

const printReport = (out: Output, report: Report): void => {
  if (out.json) {
    out.data(report);
    return;
  }
  if (report.refusal) {
    out.line(`declaration ${report.sequence} refused: ${report.refusal}`);
    return;
  }
  const count = (outcome: string) => report.resources.filter((r) => r.outcome === outcome).length;
  out.line(
    `declaration ${report.sequence}: ${count('applied')} applied, ${count('held')} held, ${count('refused')} refused, ${count('crash-looping')} crash-looping; running: ${report.running.map((r) => r.module).join(', ') || 'nothing'}`,
  );
  for (const r of report.resources.filter((o) => o.outcome !== 'applied')) out.line(`  ${r.key} ${r.outcome}: ${r.reason}${r.restarts === null ? '' : ` (${r.restarts} restarts)`}`);
};

/** `mesh agent` as the CLI runs it: with the flags only (commander hands the command after them). */
export const agentVerb = (values: AgentFlags): Promise<number> => agentCommand(values);
