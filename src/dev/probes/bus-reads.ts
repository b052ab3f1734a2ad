import { createConnection } from 'node:net';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { busAuthenticator, type Identity } from '../../adapters/identity.js';
import { personInbox, type BusWire } from '../../domain/bus/users.js';
import type { AttackOutcome, ProbeTargets } from '../security-probe.js';

// Reading the bus needs a reason: the attacks on what the bus tells and where it delivers, tried
// for real against a running mesh. A request names the subject its answer goes to, and nats-server
// 2.9 checks no publish permission for that subject — not for a consumer's deliver subject, not for
// a pull request's reply, not for any API answer — so each attack aims an answer at a declaration
// subject and looks at NODES afterwards: refused when the server said no, or when nothing landed.

export interface BusReadsTargets extends Pick<ProbeTargets, 'url' | 'wire'> {
  operator: { name: string; key: Pick<Identity, 'secretKey'> };
  /** a node whose declaration subject is aimed at (`beta` in the demo) */
  victimNode: string;
  /** ports where nats-server's HTTP monitor listened before (the stack's 18222 by default): nothing may answer there */
  formerMonitorPorts?: number[];
}

const FORMER_MONITOR_PORT = 18222;

const tcpAnswers = (port: number): Promise<string | undefined> =>
  new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.setTimeout(1_000, () => {
      socket.destroy();
      resolve('timed out (something may listen)');
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The newest sequence of NODES, asked as the operator (who may read it). */
const nodesHead = async (nc: NatsConnection, wire: BusWire): Promise<number> => {
  const reply = await nc.request(`$JS.API.STREAM.INFO.${wire.nodesStream}`, '', { timeout: 5_000 });
  return (reply.json<{ state?: { last_seq?: number } }>().state?.last_seq ?? 0);
};

/**
 * Sends one aimed request as the operator and says whether it was refused: a permissions violation
 * naming `subject`, or NODES took nothing.
 */
const aimed = async (nc: NatsConnection, violations: string[], wire: BusWire, subject: string, send: () => void | Promise<void>): Promise<{ refused: boolean; detail: string }> => {
  const before = await nodesHead(nc, wire);
  const seen = violations.length;
  await Promise.resolve(send()).catch((error: unknown) => violations.push(`(${(error as Error).message})`));
  await nc.flush();
  await pause(1_000);
  const violation = violations.slice(seen).find((v) => v.includes('Permissions Violation') && v.includes(subject));
  const after = await nodesHead(nc, wire);
  if (violation) return { refused: true, detail: violation };
  if (after === before) return { refused: true, detail: `answered nowhere: NODES took nothing (still at seq ${after})` };
  return { refused: false, detail: `NODES took ${after - before} message(s) it was aimed at (seq ${before} → ${after})` };
};

/** Every read attack, in order, each with its outcome. */
export const probeBusReads = async (targets: BusReadsTargets): Promise<AttackOutcome[]> => {
  const { url, wire, operator, victimNode } = targets;
  const outcomes: AttackOutcome[] = [];
  for (const port of targets.formerMonitorPorts ?? [FORMER_MONITOR_PORT]) {
    const answer = await tcpAnswers(port);
    outcomes.push({ attack: `a local user reads nats-server's HTTP monitor on 127.0.0.1:${port} (every connection's nkey and subscriptions)`, refused: answer !== undefined, detail: answer === undefined ? 'something accepted the connection' : `connection refused (${answer}): no monitor listens` });
  }

  let nc: NatsConnection;
  try {
    nc = await connect({ servers: url, name: 'security-probe-reads', maxReconnectAttempts: 0, timeout: 15_000, authenticator: busAuthenticator(operator.key), inboxPrefix: personInbox(operator.name) });
  } catch (error) {
    outcomes.push({ attack: `operator ${operator.name} aims deliveries at ${victimNode}'s declaration subject`, refused: false, untried: true, detail: `could not connect as the operator (${(error as Error).message}), so the attacks were not tried` });
    return outcomes;
  }
  const violations: string[] = [];
  void (async () => {
    for await (const status of nc.status()) if (status.type === 'error') violations.push(String((status.error as Error)?.message ?? status.error));
  })().catch(() => undefined);
  const target = `${wire.prefix}.node.${victimNode}.declare`;
  const record = async (attack: string, subject: string, send: () => void | Promise<void>) => outcomes.push({ attack, ...(await aimed(nc, violations, wire, subject, send)) });
  const consumer = `probe_${Date.now().toString(36)}`;
  try {
    // The victim's agent listens on its subject, so a push consumer has the interest it needs to deliver.
    const pushSubject = `$JS.API.CONSUMER.CREATE.${wire.logStream}.${consumer}_push`;
    await record(`operator ${operator.name} makes a push consumer on ${wire.logStream} delivering to ${target}`, pushSubject, () =>
      void nc.request(pushSubject, JSON.stringify({ stream_name: wire.logStream, config: { name: `${consumer}_push`, deliver_subject: target, ack_policy: 'none', inactive_threshold: 5_000_000_000 } }), { timeout: 2_000 }).catch(() => undefined),
    );
    const pullSubject = `$JS.API.CONSUMER.CREATE.${wire.logStream}.${consumer}_pull`;
    const next = `$JS.API.CONSUMER.MSG.NEXT.${wire.logStream}.${consumer}_pull`;
    await record(`operator ${operator.name} pulls from ${wire.logStream} with ${target} as the reply (MSG.NEXT)`, next, async () => {
      await nc.request(pullSubject, JSON.stringify({ stream_name: wire.logStream, config: { name: `${consumer}_pull`, ack_policy: 'none', inactive_threshold: 5_000_000_000 } }), { timeout: 2_000 }).catch(() => undefined);
      nc.publish(next, JSON.stringify({ batch: 1 }), { reply: target });
    });
    await record(`operator ${operator.name} asks the JetStream API with ${target} as the reply`, '$JS.API.INFO', () => nc.publish('$JS.API.INFO', '', { reply: target }));
    const tool = `${wire.prefix}.seat.mesh-controller.tool.enrol`;
    await record(`operator ${operator.name} has the controller answer a tool call on ${target}`, tool, () => nc.publish(tool, '{}', { reply: target }));
    const logSubject = `${wire.logPrefix}.operator.mallory`;
    const logHead = async (): Promise<number> => (await nc.request(`$JS.API.STREAM.INFO.${wire.logStream}`, '', { timeout: 5_000 })).json<{ state?: { last_seq?: number } }>().state?.last_seq ?? 0;
    const before = await logHead();
    nc.publish(tool, '{}', { reply: logSubject });
    await nc.flush();
    await pause(1_000);
    const after = await logHead();
    outcomes.push({ attack: `operator ${operator.name} has the controller answer a tool call into the log (${logSubject})`, refused: after === before, detail: after === before ? `answered nowhere: the log took nothing (still at seq ${after})` : `the log took ${after - before} message(s)` });
  } finally {
    for (const name of [`${consumer}_push`, `${consumer}_pull`]) await nc.request(`$JS.API.CONSUMER.DELETE.${wire.logStream}.${name}`, '', { timeout: 2_000 }).catch(() => undefined);
    await nc.close().catch(() => undefined);
  }
  return outcomes;
};
