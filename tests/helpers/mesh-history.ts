import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { projectRoot } from '../../src/config.js';
import { decodeCommit } from '../../src/adapters/eventlog/codec.js';
import { identityFromSeed } from '../../src/adapters/identity.js';
import { decideMeshCommand, type MeshCommand } from '../../src/domain/mesh/commands.js';
import { emptyMeshState, evolveMesh } from '../../src/domain/mesh/state.js';
import { tokenVerifier } from '../../src/domain/nodes/enrolment.js';
import { Refusal } from '../../src/domain/refusal.js';
import { meshEventRegistry, type StoredMeshEvent } from '../../src/domain/registry.js';
import { fixtureManifest } from './given.js';

// A mesh's history as its log would hand it to a fold, with no server: the frozen history of every
// event type (fixtures/event-logs/mesh-every-type.jsonl) first, then random commands decided
// against the state so far (nodes, assignments, handovers, renames, tokens, enrolments, operators,
// rollouts) and what reports and the controller state between them (facts of every kind, refusals),
// each as one commit of its own. The same seed gives the same history.

const registry = meshEventRegistry();
const NODES = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'];
const MODULES = ['nats', 'vault', 'postgres', 'gitea', 'greeter', 'caller', 'local-bus', 'audit-logger', 'route-proxy', 'telegram-sender'];
const TOKENS = Array.from({ length: 8 }, (_, i) => `00000000000000b${i}`);
const keys = new Map<number, string>();
/** A key of its own for each number, made once: making a key costs more than deciding a command. */
const key = (n: number): string => {
  const made = keys.get(n) ?? identityFromSeed(new Uint8Array(32).fill(n)).publicKey;
  keys.set(n, made);
  return made;
};

const node = fc.constantFrom(...NODES);
const module = fc.constantFrom(...MODULES);
const token = fc.constantFrom(...TOKENS);
const seatName = fc.constantFrom('mesh-broker', 'mesh-vault', 'mesh-store', 'mesh-git', 'front-desk', 'telegram-sender', 'mesh-bus-host');
const operator = fc.constantFrom('ada', 'bob', 'cyd');

const command: fc.Arbitrary<MeshCommand> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ node, module, hold: fc.subarray(['mesh-broker', 'mesh-vault', 'mesh-store', 'mesh-git', 'front-desk', 'telegram-sender']) }).map(
    ({ node, module, hold }): MeshCommand => ({ type: 'assign', module, node, hold, pins: {}, values: module === 'telegram-sender' ? { 'chat-id': '1' } : {}, placements: {} }),
  ) },
  { weight: 3, arbitrary: fc.record({ node, module }).map(({ node, module }): MeshCommand => ({ type: 'unassign', node, module })) },
  { weight: 2, arbitrary: fc.record({ seat: seatName, node, module }).map(({ seat, node, module }): MeshCommand => ({ type: 'hand-over-seat', seat, to: { node, module } })) },
  { weight: 1, arbitrary: fc.record({ seat: seatName, to: fc.constantFrom('mesh-bus-host', 'mesh-broker', 'front-door') }).map(({ seat, to }): MeshCommand => ({ type: 'rename-seat', seat, to })) },
  { weight: 1, arbitrary: fc.record({ tokenId: token, node: fc.option(node, { nil: null }) }).map(({ tokenId, node }): MeshCommand => ({ type: 'issue-enrolment-token', tokenId, verifier: tokenVerifier(`secret-${tokenId}`), publicKey: key(4), node, expiresAt: '2030-01-01T00:00:00.000Z' })) },
  { weight: 1, arbitrary: fc.record({ tokenId: token, node }).map(({ tokenId, node }): MeshCommand => ({ type: 'enrol-node', node, tokenId, secret: `secret-${tokenId}`, publicKey: key(5), busKey: key(6), now: '2029-01-01T00:00:00.000Z' })) },
  { weight: 1, arbitrary: fc.record({ node, root: fc.constantFrom('/srv', '/opt/mesh') }).map(({ node, root }): MeshCommand => ({ type: 'add-node', node, root })) },
  { weight: 1, arbitrary: fc.record({ operator, n: fc.integer({ min: 10, max: 12 }) }).map(({ operator, n }): MeshCommand => ({ type: 'add-operator', operator, publicKey: key(n) })) },
  { weight: 1, arbitrary: operator.map((operator): MeshCommand => ({ type: 'revoke-operator', operator })) },
  { weight: 1, arbitrary: fc.record({ module, policy: fc.constantFrom('roll-out' as const, 'record' as const) }).map(({ module, policy }): MeshCommand => ({ type: 'set-rollout-policy', module, policy })) },
);

/** A step of the history: a command decided against the state, or something the controller states (a fact, a refusal). */
const step = fc.oneof(
  { weight: 2, arbitrary: command.map((c) => ({ kind: 'command' as const, command: c })) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('stated' as const), template: fc.nat(), node, module, sequence: fc.integer({ min: 1, max: 50 }) }) },
);

interface FrozenLine {
  subject: string;
  commit: unknown;
}

const frozenEvents = (): StoredMeshEvent[] =>
  readFileSync(join(projectRoot, 'fixtures', 'event-logs', 'mesh-every-type.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .flatMap((line, i) => {
      const { subject, commit } = JSON.parse(line) as FrozenLine;
      return decodeCommit(registry, i + 1, subject, new TextEncoder().encode(JSON.stringify(commit)));
    });

/** What the controller states between commands, as the frozen history has each kind: a node and module put in. */
const STATED = new Set(['fact.applied', 'fact.refused', 'fact.crash-looping', 'fact.stopped', 'fact.held', 'fact.report-mismatch', 'declaration.refused']);

export const meshHistory = (options: { steps: number; seed: number }): StoredMeshEvent[] => {
  const events = frozenEvents();
  const state = emptyMeshState();
  for (const event of events) evolveMesh(state, event);
  const templates = events.filter((event) => STATED.has(event.type));
  let seq = events.at(-1)?.seq ?? 0;
  const append = (aggregate: string, proposed: readonly { type: string; data: unknown }[], commandId: string): void => {
    seq++;
    proposed.forEach((event, index) => {
      // As the log hands events back: decoded from bytes, sharing no object with a decision or another event.
      const typed = registry.validateNew(event.type, JSON.parse(JSON.stringify(event.data)), 'event');
      const version = (state.versions.get(aggregate) ?? 0) + 1;
      const stored = { id: `${commandId}-${index}`, schemaVersion: registry.currentVersion(event.type), aggregate, time: '2026-06-02T00:00:00.000Z', actor: 'history', commandId, causationId: commandId, correlationId: commandId, ...typed, seq, index, version } as StoredMeshEvent;
      events.push(stored);
      evolveMesh(state, stored);
    });
  };
  for (const name of NODES.slice(0, 4)) append(`node.${name}`, decideMeshCommand({ type: 'add-node', node: name }, state).events, `add-${name}`);
  for (const name of MODULES) {
    try {
      const decision = decideMeshCommand({ type: 'register-module', manifest: fixtureManifest(name) }, state);
      if (decision.events.length > 0) append(decision.aggregate, decision.events, `register-${name}`);
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
    }
  }
  fc.sample(step, { seed: options.seed, numRuns: options.steps }).forEach((next, i) => {
    const commandId = `h${options.seed}-${i}`;
    if (next.kind === 'command') {
      try {
        const decision = decideMeshCommand(next.command, state);
        if (decision.events.length > 0) append(decision.aggregate, decision.events, commandId);
      } catch (error) {
        if (!(error instanceof Refusal)) throw error;
      }
      return;
    }
    const template = templates[next.template % templates.length] as StoredMeshEvent;
    const data: Record<string, unknown> = { ...(template.data as Record<string, unknown>), node: next.node };
    if ('module' in data) data.module = next.module;
    if ('declarationSequence' in data) data.declarationSequence = next.sequence;
    if ('derivedFromSeq' in data) data.derivedFromSeq = seq;
    append(template.aggregate.startsWith('fact.') ? `fact.${next.node}` : `node.${next.node}`, [{ type: template.type, data }], commandId);
  });
  return events;
};
