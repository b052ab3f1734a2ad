import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { MeshFixture } from '../../../tests/helpers/given.js';
import { identityFromSeed } from '../../adapters/identity.js';
import type { MeshEvent } from '../registry.js';
import { tokenVerifier } from '../nodes/enrolment.js';
import { Refusal } from '../refusal.js';
import type { MeshCommand } from './commands.js';
import { allAssignments, assignmentKey, isAssigned } from '../assignments/state.js';
import { allHoldings, holdingKey } from '../seats/state.js';
import type { MeshState } from './state.js';

// Random sequences of commands through the deciders, as the log would record what they decide;
// after each, the rules every slice keeps must still hold. A refused command changes nothing.

const NODES = ['n1', 'n2', 'n3'];
const MODULES = ['nats', 'vault', 'postgres', 'gitea', 'greeter', 'caller', 'local-bus', 'audit-logger', 'route-proxy', 'telegram-sender'];
const TOKENS = ['00000000000000a1', '00000000000000a2', '00000000000000a3'];
const key = (n: number): string => identityFromSeed(new Uint8Array(32).fill(n)).publicKey;

const node = fc.constantFrom(...NODES);
const module = fc.constantFrom(...MODULES);
const token = fc.constantFrom(...TOKENS);
const seatName = fc.constantFrom('mesh-broker', 'mesh-vault', 'mesh-store', 'mesh-git', 'front-desk', 'telegram-sender', 'mesh-bus-host');

/** Commands with their arguments drawn from small sets, so they meet each other often. */
const command: fc.Arbitrary<MeshCommand> = fc.oneof(
  fc.record({ node, module, hold: fc.subarray(['mesh-broker', 'mesh-vault', 'mesh-store', 'mesh-git', 'front-desk', 'telegram-sender']) }).map(
    ({ node, module, hold }): MeshCommand => ({ type: 'assign', module, node, hold, pins: {}, values: module === 'telegram-sender' ? { 'chat-id': '1' } : {}, placements: {} }),
  ),
  fc.record({ node, module }).map(({ node, module }): MeshCommand => ({ type: 'unassign', node, module })),
  fc.record({ seat: seatName, node, module }).map(({ seat, node, module }): MeshCommand => ({ type: 'hand-over-seat', seat, to: { node, module } })),
  fc.record({ seat: seatName, to: fc.constantFrom('mesh-bus-host', 'mesh-broker', 'front-door') }).map(({ seat, to }): MeshCommand => ({ type: 'rename-seat', seat, to })),
  fc.record({ tokenId: token, node: fc.option(node, { nil: null }) }).map(({ tokenId, node }): MeshCommand => ({ type: 'issue-enrolment-token', tokenId, verifier: tokenVerifier(`secret-${tokenId}`), publicKey: key(4), node, expiresAt: '2030-01-01T00:00:00.000Z' })),
  fc.record({ tokenId: token, node }).map(({ tokenId, node }): MeshCommand => ({ type: 'enrol-node', node, tokenId, secret: `secret-${tokenId}`, publicKey: key(5), busKey: key(6), now: '2029-01-01T00:00:00.000Z' })),
);

/** What the log has said so far, to judge the rules that span events. */
interface Said {
  spent: Map<string, number>;
  live: Set<string>;
}

const checkInvariants = (state: MeshState, events: readonly MeshEvent[], said: Said): void => {
  for (const event of events) {
    switch (event.type) {
      case 'node.enrolled': {
        // A token is spent once.
        const times = (said.spent.get(event.data.tokenId) ?? 0) + 1;
        said.spent.set(event.data.tokenId, times);
        expect({ token: event.data.tokenId, spent: times }).toEqual({ token: event.data.tokenId, spent: 1 });
        break;
      }
      case 'assignment.created': {
        // One assignment of a module per node: never created while it stands.
        const at = assignmentKey(event.data);
        expect({ created: at, alreadyAssigned: said.live.has(at) }).toEqual({ created: at, alreadyAssigned: false });
        said.live.add(at);
        break;
      }
      case 'assignment.removed':
        said.live.delete(assignmentKey(event.data));
        break;
      case 'seat.handed-over':
        // Never an empty handover: to someone, someone else than who held it.
        expect(event.data.to.node && event.data.to.module).toBeTruthy();
        expect(event.data.from === null || event.data.from.node !== event.data.to.node || event.data.from.module !== event.data.to.module).toBe(true);
        break;
      default:
        break;
    }
  }
  // One holder per seat and scope, and that holder is an assignment that stands.
  const holders = new Map<string, string>();
  for (const { seat, scopeKey, holder } of allHoldings(state.seats)) {
    const holding = holdingKey(seat, scopeKey);
    expect({ holding, holder: assignmentKey(holder), stands: isAssigned(state.assignments, holder) }).toEqual({ holding, holder: assignmentKey(holder), stands: true });
    expect(holders.has(holding)).toBe(false);
    holders.set(holding, assignmentKey(holder));
  }
  // The fold and what the log said agree on what stands.
  expect([...allAssignments(state.assignments)].map(assignmentKey).sort()).toEqual([...said.live].sort());
};

describe('the rules every slice keeps, under random commands', () => {
  it('one holder per seat and scope, one assignment of a module per node, a token spent once, never an empty handover', () => {
    fc.assert(
      fc.property(fc.array(command, { minLength: 1, maxLength: 60 }), (commands) => {
        const mesh = new MeshFixture();
        for (const name of NODES) mesh.node(name);
        for (const name of MODULES) mesh.registerFixture(name);
        const said: Said = { spent: new Map(), live: new Set() };
        for (const next of commands) {
          let events: MeshEvent[] = [];
          try {
            events = mesh.run(next);
          } catch (error) {
            if (!(error instanceof Refusal)) throw error;
          }
          checkInvariants(mesh.state, events, said);
        }
      }),
      { numRuns: 150 },
    );
  });
});
