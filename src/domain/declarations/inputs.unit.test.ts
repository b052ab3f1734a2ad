import { describe, expect, it } from '@jest/globals';
import { MeshFixture, stored } from '../../../tests/helpers/given.js';
import { identityFromSeed } from '../../adapters/identity.js';
import type { MeshCommand } from '../mesh/commands.js';
import { Refusal } from '../refusal.js';
import { composeDeclaration } from './compose.js';
import { DeclarationInputs } from './inputs.js';
import { allAssignments } from '../assignments/state.js';
import { manifestOf } from '../catalogue/state.js';
import type { MeshState } from '../mesh/state.js';
import { allNodes } from '../nodes/state.js';
import { allSeats } from '../seats/state.js';
import { proxyHolder, routesAsked } from '../routes/grants.js';
import { routedModule } from '../../../tests/helpers/routes.js';

const nodeNames = (state: MeshState): string[] => [...allNodes(state.nodes)].map((node) => node.name);

// Incremental derivation is right when composing only the nodes an event reaches leaves every
// other node's declaration exactly as composing all of them would.

const MODULES = ['nats', 'vault', 'postgres', 'gitea', 'greeter', 'caller', 'local-bus', 'audit-logger', 'route-proxy'];
/** Modules reading what the routes and the roster derive: a route's own URL, the names the mesh serves, its machines. */
const DERIVED: (Record<string, unknown> & { name: string })[] = [
  { name: 'test-proxy', provides: [{ provision: 'route' }], canHold: ['mesh-proxy'] },
  { ...routedModule('site', { policy: [{ kind: 'redirect', from: 'www' }] }), name: 'site' },
  { name: 'names', resources: { regions: [{ name: 'hosts', file: '/etc/hosts', template: '${each:names}${entry:address} ${entry:name}\n${end:each}' }] } },
  { name: 'resolver', requires: [{ name: 'conf', contract: 'directory', provider: 'host' }], resources: { directories: [{ requirement: 'conf' }], files: [{ name: 'zones', in: 'conf', as: 'zones', template: '${each:machines}${entry:name}=${entry:address}\n${end:each}' }] } },
];

/** What a node's composition says: its digest, or every problem. */
const outcomeOf = (mesh: MeshFixture, node: string): string => {
  const composition = composeDeclaration(mesh.state, node);
  return composition.ok ? composition.declaration.digest : JSON.stringify(composition.problems);
};

/** A small generator with a seed, so a failure can be run again. */
const seeded = (seed: number) => {
  let x = seed >>> 0 || 1;
  const next = (): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0x1_0000_0000;
  };
  return { pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T, chance: (p: number): boolean => next() < p };
};

const randomCommand = (mesh: MeshFixture, random: ReturnType<typeof seeded>, nodes: string[]): MeshCommand => {
  const assignments = [...allAssignments(mesh.state.assignments)];
  const seats = [...allSeats(mesh.state.seats)];
  const roll = random.pick(['assign', 'assign', 'assign', 'unassign', 'handover', 'node', 'rename', 'cordon', 'remove', 'domain', 'answer', 'answer'] as const);
  if (roll === 'domain') return { type: 'set-node-domain', node: random.pick(nodes), domain: random.pick(['a.example', 'b.example']) };
  const asked = routesAsked(mesh.state);
  const proxy = proxyHolder(mesh.state);
  if (roll === 'answer' && asked.length > 0 && proxy) {
    const ask = random.pick(asked);
    return { type: 'answer-consumer', provider: proxy, consumer: { node: ask.node, module: ask.module }, requirement: `route:${ask.name}`, values: { publicName: ask.publicName } };
  }
  // Cordoned or not changes no declaration; a node is removed only once nothing is assigned to it (else refused).
  if (roll === 'cordon') return { type: random.pick(['cordon-node', 'uncordon-node'] as const), node: random.pick(nodes) };
  if (roll === 'remove') return { type: 'remove-node', node: random.pick(nodes) };
  if (roll === 'unassign' && assignments.length > 0) {
    const a = random.pick(assignments);
    return { type: 'unassign', module: a.module, node: a.node };
  }
  if (roll === 'handover' && assignments.length > 0 && seats.length > 0) {
    const a = random.pick(assignments);
    return { type: 'hand-over-seat', seat: random.pick(seats).name, to: { node: a.node, module: a.module } };
  }
  if (roll === 'node') return { type: 'add-node', node: random.pick(nodes), address: random.pick(['10.0.0.1', '10.0.0.2', 'host.example']) };
  if (roll === 'rename' && seats.length > 0) {
    const seat = random.pick(seats);
    return { type: 'rename-seat', seat: seat.name, to: `${seat.name.replace(/-r\d+$/, '')}-r${random.pick([1, 2, 3, 4, 5, 6, 7, 8, 9])}` };
  }
  const module = random.pick([...MODULES, ...DERIVED.map((m) => m.name)]);
  const manifest = manifestOf(mesh.state.catalogue, module);
  const claims = (manifest?.canHold ?? []).map((c) => (typeof c === 'string' ? c : c.seat)).filter(() => random.chance(0.7));
  return { type: 'assign', module, node: random.pick(nodes), hold: claims, pins: {}, values: {}, placements: {} };
};

describe('which declarations an event reaches', () => {
  let grantedInAll = 0;
  for (const seed of [1, 7, 42, 2026, 31337]) {
    it(`composing only the nodes reached leaves every other declaration as it was (seed ${seed})`, () => {
      const random = seeded(seed);
      const nodes = ['n1', 'n2', 'n3', 'n4', 'n5'];
      const mesh = new MeshFixture();
      for (const node of nodes.slice(0, 4)) mesh.node(node);
      for (const module of MODULES) mesh.registerFixture(module);
      for (const manifest of DERIVED) mesh.register(manifest);
      // A proxy and a public domain to begin with, so names are asked for and handed back from the start.
      mesh.run({ type: 'assign', module: 'test-proxy', node: 'n1', hold: ['mesh-proxy'], pins: {}, values: {}, placements: {} });
      mesh.run({ type: 'set-node-domain', node: 'n2', domain: 'a.example' });
      const inputs = new DeclarationInputs();
      const last = new Map<string, string>();
      for (const node of nodeNames(mesh.state)) {
        last.set(node, outcomeOf(mesh, node));
        inputs.record(mesh.state, node);
      }
      let applied = 0;
      let granted = 0;
      for (let step = 0; step < 300; step++) {
        const command = randomCommand(mesh, random, nodes);
        let events;
        try {
          events = mesh.run(command);
        } catch (error) {
          if (error instanceof Refusal) continue;
          throw error;
        }
        applied++;
        granted += events.filter((e) => e.type === 'route.public-name-granted').length;
        const touched = { nodes: new Set<string>(), inputs: new Set<string>(), all: false };
        for (const event of events) {
          const said = inputs.touched(mesh.state, stored('any', event));
          said.nodes.forEach((n) => touched.nodes.add(n));
          said.inputs.forEach((i) => touched.inputs.add(i));
          touched.all ||= said.all;
        }
        const reached = touched.all ? new Set(nodeNames(mesh.state)) : inputs.nodesReached(mesh.state, { nodes: [...touched.nodes], inputs: [...touched.inputs], all: false });
        for (const node of reached) {
          last.set(node, outcomeOf(mesh, node));
          inputs.record(mesh.state, node);
        }
        for (const node of nodeNames(mesh.state)) {
          expect({ step, command: command.type, node, outcome: outcomeOf(mesh, node) }).toEqual({ step, command: command.type, node, outcome: last.get(node) });
        }
      }
      expect(applied).toBeGreaterThan(50);
      grantedInAll += granted;
    });
  }

  it('exercised the routes and the roster: names were asked for, handed back and served', () => {
    expect(grantedInAll).toBeGreaterThan(0);
  });

  it('marks nothing for events that are no declaration input', () => {
    const mesh = new MeshFixture().node('n1');
    const inputs = new DeclarationInputs();
    inputs.record(mesh.state, 'n1');
    const events = mesh.run({ type: 'add-operator', operator: 'ada', publicKey: identityFromSeed(new Uint8Array(32).fill(2)).publicKey });
    for (const event of events) expect(inputs.touched(mesh.state, stored('operator.ada', event))).toEqual({ nodes: [], inputs: [], all: false });
  });
});
