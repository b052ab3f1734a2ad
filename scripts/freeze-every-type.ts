// Writes the frozen log fixtures/event-logs/mesh-every-type.jsonl: a small mesh history with at
// least one event of every type of the registry at every schema version it has ever had.
//
//   npx tsx scripts/freeze-every-type.ts OUT
//
// Commands go through the real deciders against the mesh folded so far; what the controller,
// the builder and the projector state (facts, builds' outcomes, a stall) is written as they
// propose it. Ids and times are fixed, so the output is the same on every run. The committed file
// is frozen: it records what an older control plane stored. Do not regenerate it over the committed
// one (the script refuses to): a run with the current code would write the current shapes and hide a
// change that needs an upcaster. Write to another path and compare, or add lines by hand.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { projectRoot } from '../src/config.js';
import type { Commit, ProposedEvent } from '../src/domain/events/envelope.js';
import { sourceAggregate } from '../src/domain/builds/events.js';
import { decideMeshCommand, type MeshCommand } from '../src/domain/mesh/commands.js';
import { emptyMeshState, evolveMesh } from '../src/domain/mesh/state.js';
import { tokenVerifier } from '../src/domain/nodes/enrolment.js';
import { meshEventRegistry, type StoredMeshEvent } from '../src/domain/registry.js';
import { SYSTEM_SEATS } from '../src/domain/seats/system-seats.js';

const frozenFile = join(projectRoot, 'fixtures', 'event-logs', 'mesh-every-type.jsonl');
const out = process.argv[2];
if (!out || (resolve(out) === frozenFile && existsSync(frozenFile))) {
  process.stderr.write(`usage: npx tsx scripts/freeze-every-type.ts OUT\nOUT must not be the committed ${frozenFile}: it is frozen (fixtures/event-logs/README.md)\n`);
  process.exit(2);
}
const manifest = (name: string): Record<string, unknown> => JSON.parse(readFileSync(join(projectRoot, 'fixtures', 'modules', `${name}.json`), 'utf8')) as Record<string, unknown>;

const registry = meshEventRegistry();
const state = emptyMeshState();
const lines: string[] = [];
let seq = 0;
let clock = Date.parse('2026-06-01T09:00:00.000Z');

const record = (aggregate: string, proposed: readonly (ProposedEvent & { schemaVersion?: number })[], commandId: string, actor: string): void => {
  const firstVersion = (state.versions.get(aggregate) ?? 0) + 1;
  seq++;
  const time = new Date((clock += 60_000)).toISOString();
  const commit: Commit = {
    firstVersion,
    events: proposed.map((e, i) => ({
      id: `${commandId}-${i}`,
      type: e.type,
      schemaVersion: e.schemaVersion ?? registry.currentVersion(e.type),
      aggregate,
      time,
      actor,
      commandId,
      causationId: commandId,
      correlationId: commandId,
      data: e.data,
    })),
  };
  lines.push(JSON.stringify({ subject: aggregate, commit }));
  commit.events.forEach((envelope, index) => {
    const stored: StoredMeshEvent = { ...envelope, ...registry.decode(envelope.type, envelope.schemaVersion, envelope.data, { seq, field: `events.${index}` }), seq, index, version: firstVersion + index };
    evolveMesh(state, stored);
  });
};

let commands = 0;
const run = (command: MeshCommand, actor = 'operator:ada'): void => {
  const decision = decideMeshCommand(command, state);
  if (decision.events.length === 0) throw new Error(`${command.type} decided nothing`);
  record(decision.aggregate, decision.events, `cmd-${String(++commands).padStart(3, '0')}`, actor);
};
const assign = (module: string, node: string, extra: Partial<Extract<MeshCommand, { type: 'assign' }>> = {}): void =>
  run({ type: 'assign', module, node, hold: [], pins: {}, values: {}, placements: {}, ...extra });

// Genesis, the system seats, the operators.
record('mesh.frozen', [{ type: 'mesh.initialised', schemaVersion: 1, data: { mesh: 'frozen', logStream: 'LOG' } }], 'genesis', 'operator:root');
for (const seat of SYSTEM_SEATS) run({ type: 'define-system-seat', seat }, 'operator:root');
run({ type: 'add-operator', operator: 'ada', publicKey: Buffer.alloc(32, 1).toString('base64') }, 'operator:root');
run({ type: 'add-operator', operator: 'grace', publicKey: Buffer.alloc(32, 2).toString('base64') });
run({ type: 'revoke-operator', operator: 'grace' });

// Nodes: the first two as node.added was first stored (v1: no address), the rest as it is now.
record('node.alpha', [{ type: 'node.added', schemaVersion: 1, data: { node: 'alpha', root: '/var/lib/mesh' } }], 'add-alpha', 'operator:ada');
record('node.beta', [{ type: 'node.added', schemaVersion: 1, data: { node: 'beta', root: '/srv/mesh' } }], 'add-beta', 'operator:ada');
run({ type: 'add-node', node: 'gamma', address: '127.0.0.1' });

// Modules, registered before the seat rename; greeter requires its bus at the seat "mesh-broker".
for (const name of ['local-bus', 'greeter', 'caller']) run({ type: 'register-module', manifest: manifest(name) });
const bus = [{ name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' }];
run({ type: 'register-module', manifest: { name: 'relay-a', requires: bus, seats: [{ name: 'relay', scope: 'mesh' }], canHold: ['relay'] } });
run({ type: 'register-module', manifest: { name: 'relay-b', canHold: ['relay'] } });

assign('local-bus', 'alpha', { hold: ['mesh-broker'] });
assign('greeter', 'beta', { hold: ['front-desk'], values: { greeting: 'hello from the frozen log' } });
assign('caller', 'gamma');
assign('relay-a', 'alpha', { hold: ['relay'] });
assign('relay-b', 'beta');
run({ type: 'hand-over-seat', seat: 'relay', to: { node: 'beta', module: 'relay-b' }, expectedHolder: { node: 'alpha', module: 'relay-a' } });

// The seat rename: "mesh-broker" becomes "mesh-bus-host"; manifests naming the old name keep resolving.
run({ type: 'rename-seat', seat: 'mesh-broker', to: 'mesh-bus-host' });
// A manifest registered after the rename, still under the old name.
run({ type: 'register-module', manifest: { name: 'pager', requires: bus, seats: [{ name: 'pager', scope: 'mesh' }], canHold: ['pager'] } });
assign('pager', 'gamma', { hold: ['pager'] });
assign('relay-a', 'gamma');
run({ type: 'unassign', module: 'pager', node: 'gamma' });

// Enrolment: a token for beta, spent.
const expiresAt = new Date(clock + 86_400_000 * 365).toISOString();
run({ type: 'issue-enrolment-token', tokenId: '00000000000003e8', verifier: tokenVerifier('frozen-secret'), node: 'beta', expiresAt });
run({ type: 'enrol-node', node: 'beta', tokenId: '00000000000003e8', secret: 'frozen-secret', publicKey: Buffer.alloc(32, 3).toString('base64'), now: new Date(clock).toISOString() });

// What the controller states about machines.
record('node.gamma', [{ type: 'declaration.refused', data: { node: 'gamma', derivedFromSeq: seq, reason: `sha256:${'d'.repeat(64)}`, unresolved: [{ what: 'gamma/caller requires greeting', why: 'nobody provides it yet', remedy: 'assign greeter' }] } }], 'refused-1', 'controller');
const version = { definitionVersion: 1, artifact: null };
const where = { node: 'beta', module: 'greeter', declarationSequence: 1 };
record('fact.beta', [{ type: 'fact.applied', data: { ...where, version, previous: null } }, { type: 'fact.refused', data: { ...where, version, resource: 'greeter/server', kind: 'process', reason: 'exit 1' } }], 'facts-1', 'controller');
record('fact.beta', [{ type: 'fact.crash-looping', data: { ...where, version, resource: 'greeter/server', restarts: 5, reason: 'exit 1' } }, { type: 'fact.stopped', data: { ...where, previous: version } }], 'facts-2', 'controller');
record('fact.beta', [{ type: 'fact.report-mismatch', data: { node: 'beta', declarationSequence: 1, sent: 2, answered: 1, missing: ['greeter/server'], unexpected: [] } }], 'facts-3', 'controller');

// A source moved, two builds submitted for it, one built and one failed, a rollout policy.
const source = { seat: 'mesh-git', repository: 'mesh/greeter' };
const commit = 'a1b2c3d4e5f6';
const bases = [{ name: 'node-20-runtime', digest: `sha256:${'b'.repeat(64)}` }];
record(sourceAggregate(source, 'main'), [{ type: 'source.moved', data: { source, ref: 'main', commit, heardFrom: 'operator' } }], 'moved-1', 'operator:ada');
for (const buildId of ['b1', 'b2']) {
  record('build.greeter', [{ type: 'build.submitted', data: { buildId, module: 'greeter', commit, definitionVersion: 1, source, path: '.', recipe: 'npm ci', output: 'dist', bases, registerOnly: false, reason: 'source moved' } }], `submit-${buildId}`, 'controller');
}
record('build.greeter', [{ type: 'build.succeeded', data: { buildId: 'b1', module: 'greeter', commit, digest: `sha256:${'c'.repeat(64)}`, bases, upgrade: true, rollOut: false } }], 'outcome-b1', 'builder');
record('build.greeter', [{ type: 'build.failed', data: { buildId: 'b2', module: 'greeter', commit, reason: 'exit 1', output: 'npm ERR!' } }], 'outcome-b2', 'builder');
record('module.greeter', [{ type: 'module.rollout-set', data: { module: 'greeter', policy: 'record' } }], 'policy-1', 'operator:ada');

// A projection that could not apply an event, as the projector states it.
record('projection.seats', [{ type: 'projection.stalled', data: { projection: 'seats', version: 1, seq: 20, eventType: 'seat.held', sqlstate: '42703', error: 'column "x" does not exist' } }], 'stalled-1', 'projector');

writeFileSync(out, `${lines.join('\n')}\n`);
process.stdout.write(`${lines.length} commits written to ${out}\n`);
