import { randomBytes } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { busAuthenticator, type Identity } from '../../adapters/identity.js';
import { signedMessage } from '../../agent/report-signature.js';
import { busIdentityToolSubject } from '../../domain/bus/module-identity.js';
import { hostInbox, personInbox } from '../../domain/bus/users.js';
import { declarationSchema, declarationSubject, type Declaration } from '../../domain/declarations/declaration.js';
import { factAggregate } from '../../domain/facts/events.js';
import { aliveSubject, reportSubject, type Report } from '../../domain/reports/report.js';
import type { AttackOutcome, ProbeTargets } from '../security-probe.js';

// The attacks of one identity speaking for another, tried against a running mesh: host `host.node`
// sends, on subjects it may publish on, a report and a heartbeat naming `host.otherNode`, and asks
// for a module identity of that node's. The server lets each through (the subject is the host's
// own); the controller must refuse each, act on nothing, and count it against the host that tried
// (src/controller/speaker.ts). What it did is read back: the refusal from the controller's
// /metrics, and the other node's facts from the log, read as the operator.

export interface ImpersonationProbeTargets extends ProbeTargets {
  /** the controller's HTTP API (`http://127.0.0.1:8080`), whose /metrics counts each refusal */
  httpUrl?: string;
}

const CONNECT_TIMEOUT_MS = 15_000;
/** How long the controller is given to read the forged report and count its refusal. */
const SETTLE_MS = 10_000;

const connectAs = (url: string, key: Pick<Identity, 'secretKey'>, inbox: string, name: string): Promise<NatsConnection> =>
  connect({ servers: url, name, maxReconnectAttempts: 0, timeout: CONNECT_TIMEOUT_MS, authenticator: busAuthenticator(key), inboxPrefix: inbox });

/** `mesh_impersonation_refused_total{entry,identity}` as /metrics says it now; undefined when it cannot be read. */
export const refusedCount = async (httpUrl: string | undefined, entry: string, identity: string): Promise<number | undefined> => {
  if (!httpUrl) return undefined;
  try {
    const text = await (await fetch(`${httpUrl}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
    const line = text.split('\n').find((l) => l.startsWith(`mesh_impersonation_refused_total{entry="${entry}",identity="${identity}"}`));
    return line ? Number(line.split(' ').at(-1)) : 0;
  } catch {
    return undefined;
  }
};

/** Waits until the count rises above `before`, or the settle time passes; the count then. */
const countAfter = async (httpUrl: string | undefined, entry: string, identity: string, before: number | undefined): Promise<number | undefined> => {
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const now = await refusedCount(httpUrl, entry, identity);
    if (now === undefined || before === undefined || now > before || Date.now() > deadline) return now;
    await new Promise((r) => setTimeout(r, 250));
  }
};

/** What the operator reads of `node`: its declaration now, and its newest fact's log message. */
const operatorView = async (nc: NatsConnection | undefined, targets: ProbeTargets, node: string) => {
  if (!nc) return { declaration: undefined, newestFact: undefined };
  const jsm = await jetstreamManager(nc);
  const last = async (stream: string, subject: string) => jsm.streams.getMessage(stream, { last_by_subj: subject }).catch(() => null);
  const declared = await last(targets.wire.nodesStream, declarationSubject(node, targets.wire.prefix));
  const parsed = declared ? declarationSchema.safeParse(declared.json()) : undefined;
  const fact = await last(targets.wire.logStream, `${targets.wire.logPrefix}.${factAggregate(node)}`);
  return { declaration: parsed?.success ? parsed.data : undefined, newestFact: fact ? { seq: fact.seq, text: fact.string() } : undefined };
};

/** The report `node` would send if every resource of `declaration` were crash-looping, marked so it can be found. */
const crashLoopingReport = (node: string, declaration: Declaration | undefined, marker: string): Report => ({
  node,
  sequence: declaration?.sequence ?? 0,
  digest: declaration?.digest ?? `sha256:${'0'.repeat(64)}`,
  at: new Date().toISOString(),
  resources: (declaration?.assignments ?? []).flatMap((a) => a.resources.map((r) => ({ key: r.key, module: r.module, kind: r.kind, outcome: 'crash-looping' as const, reason: marker, restarts: 5 }))),
  running: [],
  refusal: null,
});

/** Every impersonation the targets allow, each tried for real, with what the controller did. */
export const probeImpersonation = async (targets: ImpersonationProbeTargets): Promise<AttackOutcome[]> => {
  if (!targets.host) return [{ attack: 'a host speaks for another node', refused: false, untried: true, detail: 'no host identity to speak as was given (an enrolled node’s host.key)' }];
  const { node, key, otherNode } = targets.host;
  const me = `host ${node}`;
  const outcomes: AttackOutcome[] = [];
  let host: NatsConnection;
  try {
    host = await connectAs(targets.url, key, hostInbox(node), `impersonation-probe-${node}`);
  } catch (error) {
    return [{ attack: `${me} speaks for ${otherNode}`, refused: false, untried: true, detail: `could not connect as ${me} (${(error as Error).message}), so nothing was tried` }];
  }
  const reader = targets.operator ? await connectAs(targets.url, targets.operator.key, personInbox(targets.operator.name), 'impersonation-probe-reader').catch(() => undefined) : undefined;
  const { wire } = targets;
  try {
    // A report naming the other node, about its declaration outstanding, saying all it runs is crash-looping.
    const marker = `forged by the security probe as ${me} (${randomBytes(6).toString('hex')})`;
    const before = await operatorView(reader, targets, otherNode);
    const reportsBefore = await refusedCount(targets.httpUrl, 'report', me);
    // Signed with this host's key, as its agent signs (a report counts only when its node signed it): the body is the lie.
    const report = signedMessage('report', key, JSON.stringify(crashLoopingReport(otherNode, before.declaration, marker)));
    await jetstream(host).publish(reportSubject(node, wire.prefix), report.body, { headers: report.headers });
    const reportsAfter = await countAfter(targets.httpUrl, 'report', me, reportsBefore);
    const after = await operatorView(reader, targets, otherNode);
    const stated = after.newestFact !== undefined && after.newestFact.seq !== before.newestFact?.seq && after.newestFact.text.includes(marker);
    const counted = reportsBefore !== undefined && reportsAfter !== undefined && reportsAfter > reportsBefore;
    const attack = `${me} reports, on its own subject, that ${otherNode}'s modules are crash-looping`;
    if (stated) outcomes.push({ attack, refused: false, detail: `the controller stated it: ${otherNode}'s newest fact (log seq ${after.newestFact?.seq}) carries the forged reason` });
    else if (counted) {
      const aimed = before.declaration ? `about ${otherNode}'s outstanding declaration ${before.declaration.sequence}` : `(${otherNode}'s declaration could not be read, so not about its outstanding one)`;
      outcomes.push({ attack, refused: true, detail: `refused by the controller ${aimed}: mesh_impersonation_refused_total{entry="report",identity="${me}"} went from ${reportsBefore} to ${reportsAfter}, and no fact for ${otherNode} was stated${reader ? '' : ' (not read back: no operator to read the log as)'}` });
    } else outcomes.push({ attack, refused: false, untried: reportsAfter === undefined, detail: reportsAfter === undefined ? `the controller's /metrics could not be read${targets.httpUrl ? ` at ${targets.httpUrl}` : ' (no address given)'}, so its refusal was not seen` : `no refusal was counted within ${SETTLE_MS / 1000}s (mesh_impersonation_refused_total{entry="report",identity="${me}"} stayed at ${reportsAfter})` });

    // A heartbeat naming the other node, with capabilities it never said.
    const beatsBefore = await refusedCount(targets.httpUrl, 'heartbeat', me);
    const beat = signedMessage('heartbeat', key, JSON.stringify({ node: otherNode, capabilities: [`forged-${randomBytes(3).toString('hex')}`] }));
    host.publish(aliveSubject(node, wire.prefix), beat.body, { headers: beat.headers });
    await host.flush();
    const beatsAfter = await countAfter(targets.httpUrl, 'heartbeat', me, beatsBefore);
    const beatAttack = `${me} says, in its own heartbeat, that ${otherNode} has capabilities it never said`;
    if (beatsBefore !== undefined && beatsAfter !== undefined && beatsAfter > beatsBefore) outcomes.push({ attack: beatAttack, refused: true, detail: `refused by the controller: mesh_impersonation_refused_total{entry="heartbeat",identity="${me}"} went from ${beatsBefore} to ${beatsAfter}` });
    else outcomes.push({ attack: beatAttack, refused: false, untried: beatsAfter === undefined, detail: beatsAfter === undefined ? "the controller's /metrics could not be read, so its refusal was not seen" : `no refusal was counted within ${SETTLE_MS / 1000}s` });

    // A module identity of the other node's, asked for as this host.
    const identityAttack = `${me} asks for a module identity of ${otherNode}'s`;
    try {
      const answer = (await host.request(busIdentityToolSubject(wire.prefix), JSON.stringify({ node: otherNode, module: 'greeter' }), { timeout: 5_000 })).json<{ ok: boolean; refused?: { why: string }[] }>();
      const why = answer.refused?.[0]?.why ?? '';
      outcomes.push(
        !answer.ok && why.includes('speaks only for itself')
          ? { attack: identityAttack, refused: true, detail: `refused by the controller: ${why}` }
          : { attack: identityAttack, refused: false, detail: answer.ok ? 'the controller answered it (sealed to the other node, but answered)' : `refused, but not as an impersonation: ${why}` },
      );
    } catch (error) {
      outcomes.push({ attack: identityAttack, refused: false, untried: true, detail: `no answer from the controller (${(error as Error).message})` });
    }
  } finally {
    await host.close().catch(() => undefined);
    await reader?.close().catch(() => undefined);
  }
  return outcomes;
};
