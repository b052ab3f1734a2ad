import { randomBytes } from 'node:crypto';
import { AckPolicy, DeliverPolicy, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { busAuthenticator, type Identity } from '../../adapters/identity.js';
import { personInbox } from '../../domain/bus/users.js';
import { declarationSubject } from '../../domain/declarations/declaration.js';
import { factAggregate } from '../../domain/facts/events.js';
import { reportSubject } from '../../domain/reports/report.js';
import { refusedCount } from './impersonation.js';
import type { AttackOutcome, ProbeTargets } from '../security-probe.js';

// The aimed delivery, tried against a running mesh: nats-server 2.9 does not check where a
// JetStream delivery goes, so the operator (who may create a consumer on NODES to read the
// declarations) creates one whose deliver_subject is `mesh.control.<node>.report`. The server
// itself then publishes there, CONTROL captures it, and the subject says "host <node>" though the
// node said nothing. The controller must act on none of it: a report counts only when its node
// signed it (src/controller/signed-report.ts). Read back: the node's newest fact in the log, read
// as the operator, and the controller's refusal from its /metrics when its address is given.

export interface AimedReportProbeTargets extends ProbeTargets {
  /** the controller's HTTP API (`http://127.0.0.1:8080`), whose /metrics counts each refusal */
  httpUrl?: string;
  /** the node whose report subject the delivery is aimed at; `host.otherNode`, else `alpha` */
  node?: string;
}

const CONNECT_TIMEOUT_MS = 15_000;
/** How long the controller is given to read what was aimed at it and count its refusal. */
const SETTLE_MS = 10_000;

/** The newest fact commit about `node` in the log, read as the operator: its seq, or 0 when none. */
const newestFact = async (nc: NatsConnection, targets: ProbeTargets, node: string): Promise<number> => {
  const jsm = await jetstreamManager(nc);
  const fact = await jsm.streams.getMessage(targets.wire.logStream, { last_by_subj: `${targets.wire.logPrefix}.${factAggregate(node)}` }).catch(() => null);
  return fact?.seq ?? 0;
};

/** As the operator, aims a consumer's delivery of `node`'s declaration at `node`'s report subject; refused when no fact for `node` came of it. */
export const probeAimedReport = async (targets: AimedReportProbeTargets): Promise<AttackOutcome[]> => {
  const node = targets.node ?? targets.host?.otherNode ?? 'alpha';
  const subject = reportSubject(node, targets.wire.prefix);
  const attack = `the operator aims a JetStream delivery at ${subject}, so the server publishes there as if host ${node} had`;
  if (!targets.operator) return [{ attack, refused: false, untried: true, detail: 'no operator identity to create the consumer as was given' }];
  const operator: { name: string; key: Pick<Identity, 'secretKey'> } = targets.operator;
  let nc: NatsConnection;
  try {
    nc = await connect({ servers: targets.url, name: 'aimed-report-probe', maxReconnectAttempts: 0, timeout: CONNECT_TIMEOUT_MS, authenticator: busAuthenticator(operator.key), inboxPrefix: personInbox(operator.name) });
  } catch (error) {
    return [{ attack, refused: false, untried: true, detail: `could not connect as operator ${operator.name} (${(error as Error).message}), so nothing was tried` }];
  }
  const identity = `whoever published on ${subject}`;
  const consumer = `aimed-report-probe-${randomBytes(4).toString('hex')}`;
  const jsm = await jetstreamManager(nc);
  try {
    const factBefore = await newestFact(nc, targets, node);
    const countBefore = await refusedCount(targets.httpUrl, 'report', identity);
    try {
      await jsm.consumers.add(targets.wire.nodesStream, {
        name: consumer,
        deliver_subject: subject,
        filter_subject: declarationSubject(node, targets.wire.prefix),
        deliver_policy: DeliverPolicy.Last,
        ack_policy: AckPolicy.None,
        inactive_threshold: 30_000_000_000,
      });
    } catch (error) {
      return [{ attack, refused: true, detail: `the server refused the consumer (${(error as Error).message}): nothing was delivered to ${subject}` }];
    }
    // And the answer of a stream API request the operator may send, its reply aimed at the same subject.
    nc.publish(`$JS.API.STREAM.MSG.GET.${targets.wire.nodesStream}`, JSON.stringify({ last_by_subj: declarationSubject(node, targets.wire.prefix) }), { reply: subject });
    await nc.flush();
    const how = `tried as operator ${operator.name}: a push consumer ${consumer} on ${targets.wire.nodesStream} filtered to ${node}'s declaration, deliver_subject ${subject}, and a $JS.API.STREAM.MSG.GET.${targets.wire.nodesStream} request with reply ${subject}`;
    const deadline = Date.now() + SETTLE_MS;
    let countAfter = countBefore;
    while (Date.now() < deadline) {
      countAfter = await refusedCount(targets.httpUrl, 'report', identity);
      if (countAfter === undefined || countBefore === undefined || countAfter > countBefore) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    if (countAfter === undefined) await new Promise((r) => setTimeout(r, 3_000));
    const factAfter = await newestFact(nc, targets, node);
    if (factAfter !== factBefore) return [{ attack, refused: false, detail: `${how}; a new fact for ${node} appeared (log seq ${factAfter})` }];
    const counted = countBefore !== undefined && countAfter !== undefined && countAfter > countBefore;
    return [
      {
        attack,
        refused: true,
        detail: `${how}; no new fact for ${node} in the log (newest still seq ${factBefore || 'none'})${counted ? `, and the controller refused it unsigned: mesh_impersonation_refused_total{entry="report",identity="${identity}"} went from ${countBefore} to ${countAfter}` : targets.httpUrl ? ', though no refusal was counted (the delivery may not have reached CONTROL)' : ''}`,
      },
    ];
  } finally {
    await jsm.consumers.delete(targets.wire.nodesStream, consumer).catch(() => undefined);
    await nc.close().catch(() => undefined);
  }
};
