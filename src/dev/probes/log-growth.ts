import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { busAuthenticator, type Identity } from '../../adapters/identity.js';
import { signedMessage } from '../../agent/report-signature.js';
import { subjectOf } from '../../adapters/eventlog/subjects.js';
import { hostInbox, personInbox, type BusWire } from '../../domain/bus/users.js';
import { CAPABILITY_KINDS } from '../../domain/declarations/capabilities.js';
import { factAggregate } from '../../domain/facts/events.js';
import { aliveSubject, reportSubject } from '../../domain/reports/report.js';
import { DEFAULT_FACT_INTERVAL_MS } from '../../controller/fact-budget.js';
import type { AttackOutcome } from '../security-probe.js';

// Attacks on the log's growth: a node saying things as fast as it can, each of which would once
// have been a commit of the log, which is never purged. Made as the node's own host (it may say
// anything on its own subjects), counted as an operator (who may read the log's stream info):
// refused when the node's facts grew by no more than the budget allows, and nothing out of bounds
// was taken. The capabilities it sends always include every kind its agent really applies, so the
// node's declaration is never withheld for them, and its agent's next heartbeat states the truth
// again (src/controller/fact-budget.ts).

export interface LogGrowthTargets {
  url: string;
  wire: BusWire;
  /** an enrolled node's host identity: the node that floods */
  host?: { node: string; key: Pick<Identity, 'secretKey'> };
  /** an operator, to read the log's stream info (its commits, and the node's facts among them) */
  operator?: { name: string; key: Pick<Identity, 'secretKey'> };
  /** the controller's MESH_FACT_INTERVAL_MS (default 10 s): how long to wait for the newest value to be stated */
  intervalMs?: number;
  /** how many heartbeats with a new capabilities set (default 300) */
  heartbeats?: number;
}

const CONNECT_TIMEOUT_MS = 15_000;

const connectAs = (url: string, key: Pick<Identity, 'secretKey'>, inbox: string): Promise<NatsConnection> =>
  connect({ servers: url, name: 'security-probe (log growth)', maxReconnectAttempts: 0, timeout: CONNECT_TIMEOUT_MS, authenticator: busAuthenticator(key), inboxPrefix: inbox });

/** The log's commits, all of them and those on the node's facts. */
const countCommits = async (nc: NatsConnection, wire: BusWire, node: string): Promise<{ all: number; facts: number }> => {
  const jsm = await jetstreamManager(nc);
  const subject = subjectOf(wire.logPrefix, factAggregate(node));
  const info = await jsm.streams.info(wire.logStream, { subjects_filter: subject });
  const subjects = (info.state.subjects ?? {}) as Record<string, number>;
  return { all: info.state.messages, facts: subjects[subject] ?? 0 };
};

/**
 * Floods as `host`: heartbeats each naming new capabilities, heartbeats and reports out of bounds;
 * waits two intervals; and compares the node's fact commits before and after. Each attack is
 * refused when the growth is within its bound.
 */
export const probeLogGrowth = async (targets: LogGrowthTargets): Promise<AttackOutcome[]> => {
  const { url, wire, host, operator } = targets;
  const intervalMs = targets.intervalMs ?? DEFAULT_FACT_INTERVAL_MS;
  const count = targets.heartbeats ?? 300;
  const attacks = {
    flapping: `host ${host?.node ?? '?'} sends ${count} heartbeats, each with a new capabilities set`,
    oversized: `host ${host?.node ?? '?'} sends 10 heartbeats of 900 one-kilobyte capabilities and 10 reports out of bounds`,
  };
  if (!host || !operator) {
    const detail = 'needs a host identity to flood as and an operator to count the log with, so the attack was not tried';
    return Object.values(attacks).map((attack) => ({ attack, refused: false, untried: true, detail }));
  }
  let asHost: NatsConnection;
  let asOperator: NatsConnection;
  try {
    asOperator = await connectAs(url, operator.key, personInbox(operator.name));
  } catch (error) {
    const detail = `could not connect as operator ${operator.name} (${(error as Error).message}), so the attack was not tried`;
    return Object.values(attacks).map((attack) => ({ attack, refused: false, untried: true, detail }));
  }
  try {
    asHost = await connectAs(url, host.key, hostInbox(host.node));
  } catch (error) {
    await asOperator.close();
    const detail = `could not connect as host ${host.node} (${(error as Error).message}), so the attack was not tried: is it on this mesh?`;
    return Object.values(attacks).map((attack) => ({ attack, refused: false, untried: true, detail }));
  }
  const node = host.node;
  const outcomes: AttackOutcome[] = [];
  const settle = () => new Promise((r) => setTimeout(r, 2 * intervalMs + 3_000));
  try {
    // Out of bounds first: nothing of it may be stated at all.
    const before = await countCommits(asOperator, wire, node);
    const huge = Array.from({ length: 900 }, (_, i) => `k${i}-${'x'.repeat(1_000)}`);
    // Signed with the host's key, as its agent signs: what is tried here is the node's own word out of bounds.
    const beat = (body: unknown) => {
      const signed = signedMessage('heartbeat', host.key, JSON.stringify(body));
      asHost.publish(aliveSubject(node, wire.prefix), signed.body, { headers: signed.headers });
    };
    for (let i = 0; i < 10; i++) beat({ node, capabilities: huge });
    const js = jetstream(asHost);
    const digest = `sha256:${'0'.repeat(64)}`;
    const at = new Date().toISOString();
    const outcome = (i: number, reason: string) => ({ key: `probe/r${i}`, module: 'probe', kind: 'file', outcome: 'refused', reason, restarts: null });
    for (let i = 0; i < 10; i++) {
      // a reason far too long, or a report too large as a whole
      const resources = i % 2 === 0 ? [outcome(0, 'r'.repeat(5_000))] : Array.from({ length: 300 }, (_, n) => outcome(n, 'z'.repeat(1_000)));
      const report = signedMessage('report', host.key, JSON.stringify({ node, sequence: 0, digest, at, resources, running: [], refusal: null }));
      await js.publish(reportSubject(node, wire.prefix), report.body, { headers: report.headers });
    }
    await asHost.flush();
    await new Promise((r) => setTimeout(r, 3_000));
    const afterOversized = await countCommits(asOperator, wire, node);
    const grewBy = afterOversized.facts - before.facts;
    outcomes.push({
      attack: attacks.oversized,
      refused: grewBy === 0,
      detail: `${node}'s facts grew by ${grewBy} commits (the log by ${afterOversized.all - before.all}): ${grewBy === 0 ? 'each was refused where it enters (bounded by size and by field), and its node named in mesh status' : 'something out of bounds was stated'}`,
    });

    // A new capabilities set per heartbeat, each keeping the kinds the agent applies.
    for (let i = 0; i < count; i++) beat({ node, capabilities: [...CAPABILITY_KINDS, `probe-${i}`] });
    await asHost.flush();
    await settle();
    const after = await countCommits(asOperator, wire, node);
    // The first set at once, the newest once the interval has passed, and the agent's own again after it.
    const bound = 3;
    const flapped = after.facts - afterOversized.facts;
    outcomes.push({
      attack: attacks.flapping,
      refused: flapped <= bound,
      detail: `${node}'s facts grew by ${flapped} commits for ${count} capabilities sets (at most ${bound}: the first at once, the newest once ${intervalMs} ms had passed, its agent's own after that; the log grew by ${after.all - afterOversized.all} in all)${flapped <= bound ? '' : ': the budget did not hold'}`,
    });
  } finally {
    await asHost.close().catch(() => undefined);
    await asOperator.close().catch(() => undefined);
  }
  return outcomes;
};
