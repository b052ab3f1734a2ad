import { pino } from 'pino';
import { connectNats } from '../adapters/nats/connect.js';
import { enrol, storedCredentials } from '../adapters/enrolment-client.js';
import { loadConfig } from '../config.js';
import { Agent, type AgentOptions } from '../agent/agent.js';
import { agentWire, defaultStateDir } from '../agent/settings.js';
import type { Report } from '../domain/reports/report.js';
import { ValidationError } from '../errors.js';
import { parseFlags } from './flags.js';
import { output, type Output } from './output.js';

// mesh agent --node NAME [--state DIR] [--token T]: the node agent, in the foreground until SIGINT
// or SIGTERM. It then exits and leaves everything it started running: restarting an agent
// restarts nothing it runs.

const NODE_NAME = /^[A-Za-z0-9_-]+$/;

export const agentCommand = async (args: string[], hooks: Pick<AgentOptions, 'enrol'> = {}): Promise<number> => {
  const { values } = parseFlags(args, {
    node: { type: 'string' },
    state: { type: 'string' },
    token: { type: 'string' },
    json: { type: 'boolean', default: false },
  });
  const node = values.node;
  if (!node) throw new ValidationError('usage: mesh agent --node NAME [--state DIR] [--token T]', { field: '--node' });
  if (!NODE_NAME.test(node)) throw new ValidationError(`--node must be letters, digits, - or _ (it is a subject token), not "${node}"`, { field: '--node' });
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
    ...(values.token === undefined ? {} : { token: values.token }),
    // Joining: a machine with a token and no credentials yet spends the token once; one already
    // enrolled goes on with the credentials it keeps.
    enrol: async (request) => {
      if (!request.token || storedCredentials(request.stateDir)) return;
      const nc = await connectNats(request.natsUrl, { name: `mesh-agent-${request.node}-enrol` });
      try {
        await enrol(nc, { node: request.node, token: request.token, stateDir: request.stateDir, prefix: wire.prefix });
        out.line(`node ${request.node} enrolled: its key stays in ${request.stateDir}`);
      } finally {
        await nc.close();
      }
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
