import { jetstreamManager } from '@nats-io/jetstream';
import { secretAggregate } from '../../src/domain/secrets/events.js';
import { TRUST_AGGREGATE } from '../../src/domain/trust/events.js';
import type { NatsConnection } from '@nats-io/nats-core';
import { sourceAggregate } from '../../src/domain/builds/events.js';
import { encodeCommit } from '../../src/adapters/eventlog/codec.js';
import { commitHash, GENESIS_PREV, sealHeaders } from '../../src/adapters/eventlog/chain.js';
import { newIdentity, type Identity } from '../../src/adapters/identity.js';
import { voidAggregate } from '../../src/domain/log/events.js';
import type { Commit, ProposedEvent } from '../../src/domain/events/envelope.js';
import { decideMeshCommand, type MeshCommand } from '../../src/domain/mesh/commands.js';
import { emptyMeshState, evolveMesh, type MeshState } from '../../src/domain/mesh/state.js';
import { meshEventRegistry, type StoredMeshEvent } from '../../src/domain/registry.js';
import { tokenVerifier } from '../../src/domain/nodes/enrolment.js';
import { SYSTEM_SEATS } from '../../src/domain/seats/system-seats.js';
import { fixtureManifest } from '../helpers/given.js';
import { isAssigned } from '../../src/domain/assignments/state.js';

// A mesh's log written in bulk: commands decided by the real deciders against the mesh folded so
// far, facts stated as the controller states them, each commit published without waiting for the
// one before: core publishes on one connection, which JetStream stores in the order sent, flushed
// now and then and checked at the end against the stream's last sequence. Each is signed and
// chained as the log's writer does it, with `log.key` (a fresh key when none is given). With
// `withVoid`, one commit is garbage that an operator's void passes by later, so every event type
// of the registry appears. Returns the mesh as evolveMesh folds it.

export interface GeneratedLog {
  state: MeshState;
  events: number;
  types: Set<string>;
  headSeq: number;
}

const publicKeyOf = (n: number): string => Buffer.alloc(32, n % 251).toString('base64');
const registry = meshEventRegistry();

export const writeMeshLog = async (
  nc: NatsConnection,
  log: { stream: string; subjectPrefix: string; key?: Identity },
  options: { minEvents: number; nodes?: number; withVoid?: boolean },
): Promise<GeneratedLog> => {
  const jsm = await jetstreamManager(nc);
  const key = log.key ?? newIdentity();
  let prev = GENESIS_PREV;
  // One writer wrote it all: each signature answers for everything since the start (or since the intruder's bytes).
  let since = 1;
  const state = emptyMeshState();
  const types = new Set<string>();
  let unflushed = 0;
  let seq = 0;
  let events = 0;
  let clock = Date.parse('2026-12-01T00:00:00.000Z');

  const record = (aggregate: string, proposed: readonly ProposedEvent[], commandId: string, actor = 'operator:gen'): void => {
    const firstVersion = (state.versions.get(aggregate) ?? 0) + 1;
    seq++;
    const time = new Date((clock += 7)).toISOString();
    const commit: Commit = {
      firstVersion,
      events: proposed.map((e, i) => ({ id: `${commandId}-${i}`, type: e.type, schemaVersion: 1, aggregate, time, actor, commandId, causationId: commandId, correlationId: commandId, data: e.data })),
    };
    const subject = `${log.subjectPrefix}.${aggregate}`;
    const payload = encodeCommit(commit);
    const { hash, headers } = sealHeaders(key, prev, subject, seq, payload, since);
    prev = hash;
    nc.publish(subject, payload, { headers });
    unflushed++;
    commit.events.forEach((envelope, index) => {
      const stored: StoredMeshEvent = { ...envelope, ...registry.decode(envelope.type, envelope.schemaVersion, envelope.data, { seq, field: `events.${index}` }), seq, index, version: firstVersion + index };
      evolveMesh(state, stored);
      types.add(stored.type);
      events++;
    });
  };
  const flush = async (force = false): Promise<void> => {
    if (!force && unflushed < 2_000) return;
    unflushed = 0;
    await nc.flush();
  };
  let commands = 0;
  // Synchronous, so a run of commands goes out in few socket writes; `flush` is awaited between runs.
  const run = (command: MeshCommand): void => {
    const decision = decideMeshCommand(command, state);
    if (decision.events.length > 0) record(decision.aggregate, decision.events, `cmd-${++commands}`);
  };
  const assign = (module: string, node: string, extra: Partial<Extract<MeshCommand, { type: 'assign' }>> = {}) =>
    run({ type: 'assign', module, node, hold: [], pins: {}, values: {}, placements: {}, ...extra });

  record('mesh.gen', [{ type: 'mesh.initialised', data: { mesh: 'gen', logStream: log.stream } }], 'genesis');
  for (const seat of SYSTEM_SEATS) run({ type: 'define-system-seat', seat });
  for (const name of ['nats', 'vault', 'postgres', 'gitea', 'audit-logger']) run({ type: 'register-module', manifest: fixtureManifest(name) });
  const bus = [{ name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' }];
  const agent = (v: number) => ({ name: 'agent', description: `agent ${v}`, requires: bus, seats: [{ name: 'agent-slot', scope: 'node' }], canHold: ['agent-slot'] });
  run({ type: 'register-module', manifest: agent(1) });
  run({ type: 'register-module', manifest: { name: 'relay-a', requires: bus, seats: [{ name: 'relay', scope: 'mesh', emits: ['moved'] }], canHold: ['relay'] } });
  run({ type: 'register-module', manifest: { name: 'relay-b', canHold: ['relay'] } });

  const nodes = Array.from({ length: options.nodes ?? 60 }, (_, i) => `n${i}`);
  for (const [i, node] of nodes.entries()) run({ type: 'add-node', node, ...(i % 3 === 0 ? { root: `/srv/mesh${i}` } : {}) });
  assign('nats', 'n0', { hold: ['mesh-broker'] });
  assign('vault', 'n0', { hold: ['mesh-vault'] });
  assign('postgres', 'n0', { hold: ['mesh-store'] });
  assign('gitea', 'n1', { hold: ['mesh-git'], values: { 'public-name': 'git.n1' } });
  assign('relay-a', 'n2', { hold: ['relay'] });
  assign('relay-b', 'n3');

  // Enrolment: tokens for named nodes and one for any node, spent by a node never added.
  const now = new Date(clock).toISOString();
  const expiresAt = new Date(clock + 86_400_000 * 365).toISOString();
  for (const [i, node] of [...nodes.slice(0, 20), 'ghost'].entries()) {
    const tokenId = (1000 + i).toString(16).padStart(16, '0');
    run({ type: 'issue-enrolment-token', tokenId, verifier: tokenVerifier(`secret-${i}`), node: node === 'ghost' ? null : node, expiresAt });
    if (i % 4 !== 3) run({ type: 'enrol-node', node, tokenId, secret: `secret-${i}`, publicKey: publicKeyOf(i), now });
  }

  // Nodes cordoned and uncordoned, and taken out: ghost (joined with a token for any node), and
  // leaving, added, removed and added again as a new machine.
  run({ type: 'cordon-node', node: 'ghost' });
  run({ type: 'uncordon-node', node: 'ghost' });
  run({ type: 'cordon-node', node: 'ghost' });
  run({ type: 'remove-node', node: 'ghost' });
  run({ type: 'add-node', node: 'leaving', root: '/srv/leaving' });
  run({ type: 'cordon-node', node: 'leaving' });
  run({ type: 'remove-node', node: 'leaving' });
  run({ type: 'add-node', node: 'leaving' });

  for (const [i, name] of ['ada', 'grace'].entries()) run({ type: 'add-operator', operator: name, publicKey: publicKeyOf(100 + i) });
  run({ type: 'revoke-operator', operator: 'grace' });
  run({ type: 'set-command-window', seconds: 600 });

  // Routes and the public names mesh-proxy's holder grants, a node's domain changed (ADR 0007,
  // 0108), and a provider's answer to one consumer (issue 124).
  run({ type: 'register-module', manifest: fixtureManifest('route-proxy') });
  assign('route-proxy', 'n4', { hold: ['mesh-proxy'], values: { 'acme-email': 'ops@mesh.invalid' } });
  run({ type: 'set-node-domain', node: 'n5', domain: 'five.example' });
  run({ type: 'register-module', manifest: { name: 'site', requires: [{ name: 'http-port', contract: 'port', provider: 'host', port: 8080 }], routes: [{ name: 'site', port: 'http-port', policy: [{ kind: 'redirect', from: 'www' }] }] } });
  assign('site', 'n5');
  // The holder of mesh-proxy hands back each name asked for (ADR 0007), under each domain in turn.
  const handBack = (domain: string) => {
    for (const name of ['site', 'www']) run({ type: 'answer-consumer', provider: { node: 'n4', module: 'route-proxy' }, consumer: { node: 'n5', module: 'site' }, requirement: `route:${name}`, values: { publicName: `${name}.${domain}` } });
  };
  handBack('five.example');
  run({ type: 'set-node-domain', node: 'n5', domain: 'moved.example' });
  handBack('moved.example');
  run({ type: 'register-module', manifest: { name: 'store', provides: [{ provision: 'object-store', fields: { bucket: { type: 'string' } } }] } });
  run({ type: 'register-module', manifest: { name: 'app', requires: [{ name: 'store', contract: 'object-store', provider: 'module' }] } });
  assign('store', 'n6');
  assign('app', 'n7');
  run({ type: 'answer-consumer', provider: { node: 'n6', module: 'store' }, consumer: { node: 'n7', module: 'app' }, requirement: 'store', values: { bucket: 'n7-app' } });

  if (options.withVoid) {
    // Twenty bytes that are not JSON, on a subject of the log, as an intruder would put them; the
    // next commit links to them (the writer chains through whatever the log holds), and a void
    // lets every reader pass them.
    const garbage = new TextEncoder().encode('twenty bytes, no json');
    const subject = `${log.subjectPrefix}.node.intruded`;
    const at = ++seq;
    nc.publish(subject, garbage);
    prev = commitHash(new Uint8Array(0), subject, at, garbage);
    since = at + 1;
    record(voidAggregate(at), [{ type: 'log.voided', data: { seq: at, aggregate: 'node.intruded', reason: 'an intruder published it', problem: 'it carries no writer signature' } }], 'void-intruded', 'operator:ada');
  }

  let relayName = 'relay';
  let relayAt = { node: 'n2', module: 'relay-a' };
  let round = 0;
  while (events < options.minEvents) {
    round++;
    await flush();
    for (const [i, node] of nodes.entries()) {
      if (isAssigned(state.assignments, { node, module: 'agent' })) run({ type: 'unassign', module: 'agent', node });
      else assign('agent', node, { hold: ['agent-slot'] });
      if ((i + round) % 7 === 0) {
        if (isAssigned(state.assignments, { node, module: 'audit-logger' })) run({ type: 'unassign', module: 'audit-logger', node });
        else assign('audit-logger', node, { values: { 'retention-days': String(round % 90) }, placements: { logs: `/srv/logs/${round}` } });
      }
    }
    const to = relayAt.module === 'relay-a' ? { node: 'n3', module: 'relay-b' } : { node: 'n2', module: 'relay-a' };
    run({ type: 'hand-over-seat', seat: relayName, to, expectedHolder: relayAt });
    relayAt = to;
    if (round % 10 === 0) {
      const next = `relay-r${round}`;
      run({ type: 'rename-seat', seat: relayName, to: next });
      relayName = next;
      run({ type: 'register-module', manifest: agent(round) });
      // A seat that leaves the set while held: its holding stays.
      const pager = `pager${round}`;
      run({ type: 'register-module', manifest: { name: pager, requires: bus, seats: [{ name: pager, scope: 'mesh' }], canHold: [pager] } });
      assign(pager, nodes[round % nodes.length] as string, { hold: [pager] });
      run({ type: 'register-module', manifest: { name: pager, requires: bus, description: 'no seat any more' } });
    }
    if (round % 5 === 0) {
      // Facts, as the controller states them.
      const node = nodes[round % nodes.length] as string;
      record(`node.${node}`, [{ type: 'declaration.refused', data: { node, derivedFromSeq: seq, reason: `sha256:${round.toString(16).padStart(64, '0')}`, unresolved: [{ what: 'x', why: `round ${round}`, remedy: 'y' }] } }], `refused-${round}`, 'controller');
      const version = { definitionVersion: 1, artifact: null };
      const where = { node, module: 'agent', declarationSequence: round };
      record(`fact.${node}`, [{ type: 'fact.applied', data: { ...where, version, previous: null } }, { type: 'fact.refused', data: { ...where, version, resource: 'agent/x', kind: 'process', reason: 'exit 1' } }], `facts-a-${round}`, 'controller');
      record(`fact.${node}`, [{ type: 'fact.crash-looping', data: { ...where, version, resource: 'agent/x', restarts: 5, reason: 'exit 1' } }, { type: 'fact.stopped', data: { ...where, previous: version } }], `facts-b-${round}`, 'controller');
      // A hold stated, narrowed with another reason, ended: the module's whole set each time.
      const holding = round % 10 === 0 ? [] : [{ resource: 'agent/x', kind: 'secret', reason: `waiting for the vault to deliver x${round % 3}` }, ...(round % 15 === 5 ? [] : [{ resource: 'agent/y', kind: 'process', reason: null }])];
      record(`fact.${node}`, [{ type: 'fact.held', data: { ...where, resources: holding } }], `facts-d-${round}`, 'controller');
      // A secret the vault made, named with its recipients (never a value), some of them shared with a second node after.
      const secret = `test-login/n${round % 4}-agent`;
      record(secretAggregate(secret), [{ type: 'secret.made', data: { secret, purpose: `the login of round ${round}`, recipients: [node], version: round } }], `secret-made-${round}`, 'controller');
      if (round % 10 === 5) record(secretAggregate(secret), [{ type: 'secret.shared', data: { secret, recipients: [...new Set([node, 'n1'])].sort(), version: round } }], `secret-shared-${round}`, 'controller');
      // One of the mesh's own, sealed at genesis, handed to a vault, then to the next one.
      if (round % 25 === 5) {
        const own = `mesh/postgres-round-${round}`;
        record(secretAggregate(own), [{ type: 'secret.founded', data: { secret: own, purpose: `the login of round ${round}`, version: 1, sealedTo: [{ name: 'controller', key: 'k1' }, { name: 'operator:ada', key: 'k2' }] } }], `secret-founded-${round}`, 'genesis');
        if (round % 50 === 5) record(secretAggregate(own), [{ type: 'secret.handed-over', data: { secret: own, version: 1, vault: { node, module: 'vault' } } }], `secret-handed-over-${round}`, 'controller');
      }
      // A rotation of it: started, made, applied, confirmed, then retired — or abandoned half-way.
      if (round % 10 === 0) {
        const rotation = { secret, version: round + 1 };
        const parties = { node, module: 'agent' };
        record(secretAggregate(secret), [{ type: 'secret.rotation-started', data: { ...rotation, from: round, parties: 'two', appliers: [{ node: 'n1', module: 'agent' }], readers: [parties] } }], `rotate-${round}`);
        record(secretAggregate(secret), [{ type: 'secret.rotation-made', data: rotation }], `rotation-made-${round}`, 'controller');
        record(secretAggregate(secret), [{ type: 'secret.rotation-applied', data: { ...rotation, node: 'n1', module: 'agent', declarationSequence: round } }], `rotation-applied-${round}`, 'controller');
        if (round % 20 === 0) {
          // abandoned after its reader was handed the new value: it unwinds until the reader is back on the old one
          record(secretAggregate(secret), [{ type: 'secret.rotation-abandoned', data: { ...rotation, reason: `round ${round}` } }], `rotation-abandoned-${round}`);
          record(secretAggregate(secret), [{ type: 'secret.rotation-reverted', data: { ...rotation, ...parties, declarationSequence: round } }], `rotation-reverted-${round}`, 'controller');
        } else {
          record(secretAggregate(secret), [{ type: 'secret.rotation-confirmed', data: { ...rotation, ...parties, declarationSequence: round } }], `rotation-confirmed-${round}`, 'controller');
          record(secretAggregate(secret), [{ type: 'secret.rotation-retired', data: { ...rotation, retired: round } }], `rotation-retired-${round}`, 'controller');
        }
      }
      // What an agent said it applies, stated again when it changed; a trust root set, then rotated.
      if (round % 25 === 5) record(`fact.${node}`, [{ type: 'fact.capabilities', data: { node, capabilities: round % 50 === 5 ? ['region'] : ['region', 'service', 'trust-anchor'] } }], `facts-e-${round}`, 'controller');
      if (round % 40 === 10) {
        const fingerprint = `sha256:${round.toString(16).padStart(64, 'a')}`;
        record(TRUST_AGGREGATE, [{ type: 'trust.root-set', data: { certificate: `-----BEGIN CERTIFICATE-----\nround${round}\n-----END CERTIFICATE-----\n`, fingerprint, subject: `CN=mesh root ${round}`, validTo: '2036-01-01T00:00:00.000Z' } }], `trust-root-${round}`);
      }
      record(`fact.${node}`, [{ type: 'fact.report-mismatch', data: { node, declarationSequence: round, sent: 2, answered: 1, missing: ['agent/x'], unexpected: [] } }], `facts-c-${round}`, 'controller');
      // A source moved, a build submitted for it, its outcome (byte-identical rebuilds among them), an outcome for no build.
      const commit = round.toString(16).padStart(12, 'a');
      const source = { seat: 'mesh-git', repository: 'mesh/agent' };
      const bases = [{ name: 'node-20-runtime', digest: `sha256:${'b'.repeat(63)}${round % 2}` }];
      record(sourceAggregate(source, 'main'), [{ type: 'source.moved', data: { source, ref: 'main', commit, heardFrom: 'operator' } }], `moved-${round}`);
      const build = { buildId: `b${round}`, module: 'agent', commit };
      record('build.agent', [{ type: 'build.submitted', data: { ...build, definitionVersion: 1, source, path: '.', recipe: 'npm ci', output: 'dist', bases, registerOnly: false, reason: 'source moved' } }], `submit-${round}`);
      const outcome =
        round % 3 === 2
          ? { type: 'build.failed', data: { ...build, reason: 'exit 1', output: 'npm ERR!' } }
          : { type: 'build.succeeded', data: { ...build, digest: `sha256:${'c'.repeat(63)}${round % 4}`, bases, upgrade: true, rollOut: round % 4 !== 0 } };
      record('build.agent', [outcome, { type: 'build.failed', data: { ...build, buildId: 'never-submitted', reason: 'x', output: '' } }], `outcome-${round}`);
      record('module.agent', [{ type: 'module.rollout-set', data: { module: 'agent', policy: round % 2 ? 'record' : 'roll-out' } }], `policy-${round}`);
      // A version recorded and not rolled out is deployed by an operator (mesh module deploy).
      if (round % 4 === 0 && round % 3 !== 2) record('module.agent', [{ type: 'module.version-deployed', data: { module: 'agent', digest: `sha256:${'c'.repeat(63)}0`, commit, buildId: build.buildId, replaced: null } }], `deploy-${round}`);
      if (round % 3 === 2) record('module.agent', [{ type: 'module.version-kept', data: { module: 'agent', head: commit, failedBuild: build.buildId, reason: `kept in round ${round}` } }], `kept-${round}`);
      record(`projection.seats`, [{ type: 'projection.stalled', data: { projection: 'seats', version: 1, seq, eventType: 'seat.held', sqlstate: round % 2 ? '42703' : null, error: 'column "x" does not exist' } }], `stalled-${round}`, 'controller');
    }
  }
  // Cordoned at the end, so every round could assign to it.
  run({ type: 'cordon-node', node: 'n5' });
  await flush(true);
  const stored = (await jsm.streams.info(log.stream)).state;
  if (stored.last_seq !== seq || stored.messages !== seq) throw new Error(`the stream holds ${stored.messages} commits up to seq ${stored.last_seq}; ${seq} were generated`);
  return { state, events, types, headSeq: seq };
};
