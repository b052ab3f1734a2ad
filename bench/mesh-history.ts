import { Worker } from 'node:worker_threads';
import { jetstreamManager } from '@nats-io/jetstream';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/nats-core';
import { encodeCommit } from '../src/adapters/eventlog/codec.js';
import { commitHash, GENESIS_PREV, KEY_HEADER, PREV_HEADER, SIG_HEADER, SINCE_HEADER } from '../src/adapters/eventlog/chain.js';
import { verifyBytes, type Identity } from '../src/adapters/identity.js';
import { toBase64 } from '../src/adapters/key-files.js';
import { isAssigned } from '../src/domain/assignments/state.js';
import { sourceAggregate } from '../src/domain/builds/events.js';
import type { Commit, ProposedEvent } from '../src/domain/events/envelope.js';
import { decideMeshCommand, type MeshCommand } from '../src/domain/mesh/commands.js';
import { meshAggregate } from '../src/domain/mesh/events.js';
import { emptyMeshState, evolveMesh, type MeshState } from '../src/domain/mesh/state.js';
import { tokenVerifier } from '../src/domain/nodes/enrolment.js';
import { meshEventRegistry, type StoredMeshEvent } from '../src/domain/registry.js';
import { SYSTEM_SEATS } from '../src/domain/seats/system-seats.js';
import { fixtureManifest } from '../tests/helpers/given.js';

// The log a running mesh of 1,000 nodes writes, in bulk: the mesh begun as the controller begins
// it (its genesis names the controller's key, its system seats under the controller's own command
// ids), an operator, the nodes added, then the modules registered, every node enrolled and
// running the agent and one service, and from there what a running mesh mostly writes: facts
// stated from the agents' reports, builds of moved sources, assignments coming and going, a seat
// handed over, a module's definition changed now and then. Commands are decided by the real
// deciders against the mesh folded so far; facts are stated as the controller states them.
//
// Every commit is signed and chained as the controller's writer does it (one signature answering
// for everything since seq 1; the headers of chain.ts's sealHeaders), and published without
// waiting for the one before: core publishes on one connection, which JetStream stores in the
// order sent, a batch of a few thousand at a time, checked at the end against the stream's last
// sequence. The chain's hashes are computed here; the signatures, a quarter of the work, are made
// by a worker thread while the next batch is decided, so both of the machine's cores write. The first 2,000 events of each type are read back
// through the registry's schemas (a generated event that does not parse stops the run); later ones
// of the same shapes are folded as generated.
//
// The log stops at the first commit that reaches `events`; `nodes` are all added within the first
// `nodes` + 20 events, so a log of 1,000 events is the 1,000 nodes added and little else, and from
// about 6,000 events on the mesh is whole and only its history grows.

export interface MeshHistory {
  events: number;
  commits: number;
  /** what the log's event types are, and how many of each */
  types: Map<string, number>;
  state: MeshState;
  seconds: number;
}

export interface MeshHistoryOptions {
  stream: string;
  subjectPrefix: string;
  meshName: string;
  /** the controller's key: the genesis names it and every commit is signed with it */
  key: Identity;
  operator: { name: string; publicKey: string };
  events: number;
  nodes?: number;
  progress?: (events: number, seconds: number) => void;
}

const CHECKED_PER_TYPE = 2_000;
const FLUSH_EVERY = 4_000;
/** The services every node runs one of (svc-0 … svc-9); svc-k sits on nodes n with n % 10 = k. */
export const SERVICES = 10;
export const nodeName = (i: number): string => `n${String(i).padStart(4, '0')}`;
export const serviceName = (k: number): string => `svc-${k}`;
const BUS = [{ name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' }];

const publicKeyOf = (n: number): string => Buffer.alloc(32, n % 251).toString('base64');

/** A small deterministic generator, so two runs write the same mesh. */
const random = (seed: number): (() => number) => {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

export const writeMeshHistory = async (nc: NatsConnection, options: MeshHistoryOptions): Promise<MeshHistory> => {
  const started = process.hrtime.bigint();
  const elapsed = (): number => Number(process.hrtime.bigint() - started) / 1e9;
  const registry = meshEventRegistry();
  const jsm = await jetstreamManager(nc);
  const state = emptyMeshState();
  const types = new Map<string, number>();
  const target = options.events;
  const nodeCount = options.nodes ?? 1_000;
  let prev = GENESIS_PREV;
  let seq = 0;
  let events = 0;
  let unflushed = 0;
  let commands = 0;
  let nextProgress = 100_000;
  let clock = Date.parse('2026-06-01T00:00:00.000Z');

  const record = (aggregate: string, proposed: readonly ProposedEvent[], commandId: string, actor = 'operator:ada'): void => {
    const firstVersion = (state.versions.get(aggregate) ?? 0) + 1;
    seq++;
    const time = new Date((clock += 50)).toISOString();
    const commit: Commit = {
      firstVersion,
      events: proposed.map((e, i) => ({ id: `${commandId}-${i}`, type: e.type, schemaVersion: registry.currentVersion(e.type), aggregate, time, actor, commandId, causationId: commandId, correlationId: commandId, data: e.data })),
    };
    const subject = `${options.subjectPrefix}.${aggregate}`;
    const payload = encodeCommit(commit);
    // One writer wrote it all: each signature answers for everything since seq 1.
    const hash = commitHash(prev, subject, seq, payload, 1);
    publisher.add({ seq, subject, payload, prev, hash });
    prev = hash;
    unflushed++;
    commit.events.forEach((envelope, index) => {
      const seen = types.get(envelope.type) ?? 0;
      types.set(envelope.type, seen + 1);
      const position = { seq, index, version: firstVersion + index };
      const stored =
        seen < CHECKED_PER_TYPE
          ? ({ ...envelope, ...registry.decode(envelope.type, envelope.schemaVersion, envelope.data, { seq, field: `events.${index}` }), ...position } as StoredMeshEvent)
          : ({ ...envelope, ...position } as StoredMeshEvent);
      evolveMesh(state, stored);
      events++;
    });
  };
  const full = (): boolean => events >= target;
  const publisher = new SignedPublisher(nc, options.key);
  const flush = async (force = false): Promise<void> => {
    if (!force && unflushed < FLUSH_EVERY) return;
    unflushed = 0;
    await publisher.ship();
    if (force) await publisher.drain();
    if (options.progress && events >= nextProgress) {
      options.progress(events, elapsed());
      nextProgress += 100_000;
    }
  };
  /** A command decided against the mesh folded so far; one the decider leaves as it is appends nothing. */
  const run = (command: MeshCommand, commandId = `cmd-${++commands}`, actor?: string): void => {
    if (full()) return;
    const decision = decideMeshCommand(command, state);
    if (decision.events.length > 0) record(decision.aggregate, decision.events, commandId, actor);
  };
  const assign = (module: string, node: string, extra: Partial<Extract<MeshCommand, { type: 'assign' }>> = {}): void =>
    run({ type: 'assign', module, node, hold: [], pins: {}, values: {}, placements: {}, ...extra });

  // The mesh begun as the controller begins it (bootstrap.ts), so the controller extends this log.
  record(meshAggregate(options.meshName), [{ type: 'mesh.initialised', data: { mesh: options.meshName, logStream: options.stream, controllerKey: options.key.publicKey } }], `genesis:${options.meshName}`, 'controller');
  for (const seat of SYSTEM_SEATS) run({ type: 'define-system-seat', seat }, `genesis:${options.meshName}:seat:${seat.name}`, 'controller');
  run({ type: 'add-operator', operator: options.operator.name, publicKey: options.operator.publicKey }, 'first-operator', 'genesis');
  const nodes = Array.from({ length: nodeCount }, (_, i) => nodeName(i));
  for (const [i, node] of nodes.entries()) {
    run({ type: 'add-node', node, ...(i % 3 === 0 ? { root: `/srv/mesh${i}` } : {}) });
    await flush();
  }

  // The mesh's own modules, the agent on every node, a service on every node.
  for (const name of ['nats', 'vault', 'postgres', 'gitea', 'audit-logger']) run({ type: 'register-module', manifest: fixtureManifest(name) });
  const agent = (v: number) => ({ name: 'agent', description: `agent ${v}`, requires: BUS, seats: [{ name: 'agent-slot', scope: 'node' }], canHold: ['agent-slot'] });
  run({ type: 'register-module', manifest: agent(1) });
  const service = (k: number, v: number) => ({ name: serviceName(k), description: `service ${k}, definition ${v}`, requires: BUS });
  for (let k = 0; k < SERVICES; k++) run({ type: 'register-module', manifest: service(k, 1) });
  run({ type: 'register-module', manifest: { name: 'relay-a', requires: BUS, seats: [{ name: 'relay', scope: 'mesh', emits: ['moved'] }], canHold: ['relay'] } });
  run({ type: 'register-module', manifest: { name: 'relay-b', canHold: ['relay'] } });
  assign('nats', nodes[0] as string, { hold: ['mesh-broker'] });
  assign('vault', nodes[0] as string, { hold: ['mesh-vault'] });
  assign('postgres', nodes[1] as string, { hold: ['mesh-store'] });
  assign('gitea', nodes[2] as string, { hold: ['mesh-git'], values: { 'public-name': 'git.mesh' } });
  assign('relay-a', nodes[3] as string, { hold: ['relay'] });
  assign('relay-b', nodes[4] as string);
  const expiresAt = new Date(clock + 86_400_000 * 365).toISOString();
  for (const [i, node] of nodes.entries()) {
    const tokenId = (0x10000 + i).toString(16).padStart(16, '0');
    run({ type: 'issue-enrolment-token', tokenId, verifier: tokenVerifier(`secret-${i}`), node, expiresAt });
    run({ type: 'enrol-node', node, tokenId, secret: `secret-${i}`, publicKey: publicKeyOf(i), now: new Date(clock).toISOString() });
    assign('agent', node, { hold: ['agent-slot'] });
    assign(serviceName(i % SERVICES), node);
    await flush();
  }

  // A running mesh: mostly facts from the agents' reports.
  const next = random(16);
  const declarationSequence = new Map<string, number>();
  const moduleVersion = new Map<string, number>();
  let relay = { node: nodes[3] as string, module: 'relay-a' };
  let step = 0;
  let builds = 0;
  while (!full()) {
    step++;
    await flush();
    const i = Math.floor(next() * nodeCount);
    const node = nodes[i] as string;
    const svc = serviceName(i % SERVICES);
    const sequence = (declarationSequence.get(node) ?? 0) + 1;
    declarationSequence.set(node, sequence);
    const module = next() < 0.5 ? 'agent' : svc;
    const definitionVersion = moduleVersion.get(module) ?? 1;
    const version = { definitionVersion, artifact: `sha256:${(step % 4096).toString(16).padStart(64, 'a')}` };
    const where = { node, module, declarationSequence: sequence };
    const fact = (proposed: ProposedEvent[]): void => record(`fact.${node}`, proposed, `report-${node}-${sequence}-${step}`, 'controller');
    const roll = next();
    if (roll < 0.58) {
      fact([{ type: 'fact.applied', data: { ...where, version, previous: step % 3 === 0 ? null : { definitionVersion, artifact: null } } }]);
    } else if (roll < 0.68) {
      const holding = step % 2 === 0 ? [] : [{ resource: `${module}/config`, kind: 'secret', reason: `waiting for the vault to deliver ${module}-token` }];
      fact([{ type: 'fact.held', data: { ...where, resources: holding } }]);
    } else if (roll < 0.73) {
      fact([{ type: 'fact.crash-looping', data: { ...where, version, resource: `${module}/main`, restarts: 3 + (step % 20), reason: 'exit 1' } }]);
    } else if (roll < 0.78) {
      fact([{ type: 'fact.stopped', data: { ...where, previous: version } }, { type: 'fact.applied', data: { ...where, version, previous: null } }]);
    } else if (roll < 0.81) {
      fact([{ type: 'fact.refused', data: { ...where, version, resource: `${module}/main`, kind: 'process', reason: 'the binary is missing' } }]);
    } else if (roll < 0.83) {
      fact([{ type: 'fact.report-mismatch', data: { node, declarationSequence: sequence, sent: 3, answered: 2, missing: [`${module}/main`], unexpected: [] } }]);
    } else if (roll < 0.85) {
      record(`node.${node}`, [{ type: 'declaration.refused', data: { node, derivedFromSeq: seq, reason: `sha256:${step.toString(16).padStart(64, '0')}`, unresolved: [{ what: 'bus', why: 'no holder of mesh-broker answers', remedy: 'assign one' }] } }], `refused-${step}`, 'controller');
    } else if (roll < 0.89) {
      // A source moved, a build submitted for it, its outcome; now and then the policy changed or a version kept.
      const k = step % SERVICES;
      const built = serviceName(k);
      const commit = step.toString(16).padStart(12, 'a');
      const source = { seat: 'mesh-git', repository: `mesh/${built}` };
      const bases = [{ name: 'node-20-runtime', digest: `sha256:${'b'.repeat(63)}${step % 2}` }];
      const build = { buildId: `b${++builds}`, module: built, commit };
      record(sourceAggregate(source, 'main'), [{ type: 'source.moved', data: { source, ref: 'main', commit, heardFrom: 'operator' } }], `moved-${step}`);
      record(`build.${built}`, [{ type: 'build.submitted', data: { ...build, definitionVersion: 1, source, path: '.', recipe: 'npm ci', output: 'dist', bases, registerOnly: false, reason: 'source moved' } }], `submit-${step}`, 'controller');
      const failed = builds % 5 === 0;
      record(
        `build.${built}`,
        [failed ? { type: 'build.failed', data: { ...build, reason: 'exit 1', output: 'npm ERR!' } } : { type: 'build.succeeded', data: { ...build, digest: `sha256:${step.toString(16).padStart(64, 'c')}`, bases, upgrade: true, rollOut: true } }],
        `outcome-${step}`,
        'controller',
      );
      if (failed) record(`module.${built}`, [{ type: 'module.version-kept', data: { module: built, head: commit, failedBuild: build.buildId, reason: 'kept until the build is fixed' } }], `kept-${step}`);
      else if (builds % 7 === 0) record(`module.${built}`, [{ type: 'module.rollout-set', data: { module: built, policy: builds % 2 ? 'record' : 'roll-out' } }], `policy-${step}`);
    } else if (roll < 0.96) {
      // An assignment coming or going: the audit logger on a node, with its values.
      if (isAssigned(state.assignments, { node, module: 'audit-logger' })) run({ type: 'unassign', module: 'audit-logger', node });
      else assign('audit-logger', node, { values: { 'retention-days': String(30 + (step % 60)) }, placements: { logs: `/srv/logs/${node}` } });
    } else if (roll < 0.985) {
      const to = relay.module === 'relay-a' ? { node: nodes[4] as string, module: 'relay-b' } : { node: nodes[3] as string, module: 'relay-a' };
      run({ type: 'hand-over-seat', seat: 'relay', to, expectedHolder: relay });
      relay = to;
    } else if (roll < 0.998) {
      // A module's definition changed: every node that runs it gets a new declaration.
      const k = step % SERVICES;
      const v = (moduleVersion.get(serviceName(k)) ?? 1) + 1;
      moduleVersion.set(serviceName(k), v);
      run({ type: 'register-module', manifest: service(k, v) });
    } else {
      record('projection.seats', [{ type: 'projection.stalled', data: { projection: 'seats', version: 1, seq, eventType: 'seat.held', sqlstate: '42703', error: 'column "x" does not exist' } }], `stalled-${step}`, 'controller');
    }
  }
  await flush(true);
  await publisher.close();
  const stored = (await jsm.streams.info(options.stream)).state;
  if (stored.last_seq !== seq || stored.messages !== seq) throw new Error(`the stream holds ${stored.messages} commits up to seq ${stored.last_seq}; ${seq} were generated`);
  return { events, commits: seq, types, state, seconds: elapsed() };
};

interface Unsigned {
  seq: number;
  subject: string;
  payload: Uint8Array;
  prev: Uint8Array;
  hash: Uint8Array;
}

/** The worker's whole program: ed25519 over each 32-byte hash it is sent, with the key it was given. */
const SIGNER = `
const { parentPort, workerData } = require('node:worker_threads');
const { createPrivateKey, sign } = require('node:crypto');
const seed = Buffer.from(workerData.secretKey, 'base64').subarray(0, 32);
const key = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]), format: 'der', type: 'pkcs8' });
parentPort.on('message', ({ id, hashes }) => {
  const signatures = Buffer.allocUnsafe((hashes.length / 32) * 64);
  for (let i = 0; i < hashes.length / 32; i++) sign(null, hashes.subarray(i * 32, i * 32 + 32), key).copy(signatures, i * 64);
  parentPort.postMessage({ id, signatures }, [signatures.buffer]);
});
`;

/**
 * Commits signed by a worker a batch at a time and published in order: while one batch is being
 * signed the next is decided, and a batch is published once its signatures are back and the one
 * before it is out.
 */
class SignedPublisher {
  private readonly worker: Worker;
  private pending: Unsigned[] = [];
  private published: Promise<void> = Promise.resolve();
  private batches = 0;
  private readonly waiting = new Map<number, (signatures: Uint8Array) => void>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly key: Identity,
  ) {
    this.worker = new Worker(SIGNER, { eval: true, workerData: { secretKey: key.secretKey } });
    this.worker.on('message', ({ id, signatures }: { id: number; signatures: Uint8Array }) => {
      this.waiting.get(id)?.(signatures);
      this.waiting.delete(id);
    });
  }

  add(commit: Unsigned): void {
    this.pending.push(commit);
  }

  /** Sends what was added to be signed, and waits for the batch before it to be published. */
  async ship(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    const id = ++this.batches;
    const hashes = new Uint8Array(batch.length * 32);
    batch.forEach((commit, i) => hashes.set(commit.hash, i * 32));
    const signed = new Promise<Uint8Array>((resolve) => this.waiting.set(id, resolve));
    this.worker.postMessage({ id, hashes }, [hashes.buffer]);
    const before = this.published;
    this.published = (async () => {
      const signatures = await signed;
      await before;
      batch.forEach((commit, i) => {
        const signature = toBase64(signatures.subarray(i * 64, i * 64 + 64));
        // The worker's first signature is checked here, so a wrong key fails the run, not the controller's read.
        if (commit.seq === 1 && !verifyBytes(this.key.publicKey, commit.hash, signature)) throw new Error('the signing worker signed with another key');
        const headers = natsHeaders();
        headers.set(PREV_HEADER, toBase64(commit.prev));
        headers.set(SIG_HEADER, signature);
        if (commit.seq > 1) headers.set(SINCE_HEADER, '1');
        else headers.set(KEY_HEADER, this.key.publicKey);
        this.nc.publish(commit.subject, commit.payload, { headers });
      });
      await this.nc.flush();
    })();
    await before;
  }

  /** Everything added is published. */
  async drain(): Promise<void> {
    await this.ship();
    await this.published;
  }

  async close(): Promise<void> {
    await this.drain();
    await this.worker.terminate();
  }
}
