import type { Resolution } from '../assignments/events.js';
import type { Manifest, SeatDeclaration } from '../catalogue/manifest.js';
import type { StoredMeshEvent } from '../registry.js';
import type { AssignmentRef } from '../seats/events.js';
import { DEFAULT_NODE_ROOT } from '../nodes/events.js';
import { emptyBuildsState, evolveBuilds, type BuildsState } from '../builds/state.js';
import { emptyFactsState, evolveFacts, type FactsState } from '../facts/state.js';

// The mesh as the log says it is: the one state every rule is judged against. Folded from the
// whole log in order; `seq` is the last log sequence folded in, the point a decision was made at.

export interface SeatState {
  id: string;
  name: string;
  /** former names, still resolving (ADR 0122: a rename freezes nothing) */
  aliases: string[];
  scope: 'mesh' | 'node';
  delivers: string | null;
  reserved: boolean;
  decided: string;
  protocol: { accepts: { verb: string; retain: string }[]; emits: string[]; serves: string[] };
  definer: { kind: 'system' } | { kind: 'module'; module: string };
}

export interface ModuleState {
  name: string;
  definitionVersion: number;
  digest: string;
  manifest: Manifest;
}

export interface NodeState {
  name: string;
  root: string;
  /** where other nodes reach it; its name when none was given */
  address: string | null;
  /** the agent's public key, once the node has enrolled */
  publicKey?: string;
  /** the host's identity on the bus (ed25519), once enrolled; absent for nodes enrolled before identities */
  busKey?: string;
}

export interface EnrolmentTokenState {
  tokenId: string;
  verifier: string;
  node: string | null;
  expiresAt: string;
  spentBy?: string;
  /** the identity a joining agent reaches the bus as, derived from the token's secret */
  publicKey?: string;
}

export interface AssignmentState {
  module: string;
  node: string;
  definitionVersion: number;
  resolutions: Resolution[];
  pins: Record<string, AssignmentRef>;
  values: Record<string, string | number | boolean>;
  placements: Record<string, string>;
}

export interface MeshState {
  seq: number;
  seats: Map<string, SeatState>;
  modules: Map<string, ModuleState>;
  nodes: Map<string, NodeState>;
  /** keyed `<node>/<module>` */
  assignments: Map<string, AssignmentState>;
  /** keyed `<seatId>@<scopeKey>`; scopeKey is `mesh` or the node's name */
  holdings: Map<string, AssignmentRef>;
  /** every command the log holds, so a retried command is answered, not repeated */
  commands: Map<string, { seq: number; aggregate: string }>;
  /** each aggregate's version (its event count), for the append's expectation */
  versions: Map<string, number>;
  /** the last reason each node's declaration could not be composed, the log sequence it was stated at, and the one the refused composition was derived at */
  declarationRefusals: Map<string, { reason: string; seq: number; derivedFromSeq: number }>;
  enrolmentTokens: Map<string, EnrolmentTokenState>;
  /** operators by name, with the key their commands are signed with */
  operators: Map<string, { operator: string; publicKey: string; revoked: boolean }>;
  /** sources' heads, builds, module versions and what rolls out (src/domain/builds) */
  builds: BuildsState;
  /** what the control plane has stated about machines (fact.* events), so it states each change once (src/domain/facts) */
  facts: FactsState;
}

export const emptyMeshState = (): MeshState => ({
  seq: 0,
  seats: new Map(),
  modules: new Map(),
  nodes: new Map(),
  assignments: new Map(),
  holdings: new Map(),
  commands: new Map(),
  versions: new Map(),
  declarationRefusals: new Map(),
  enrolmentTokens: new Map(),
  operators: new Map(),
  builds: emptyBuildsState(),
  facts: emptyFactsState(),
});

export const assignmentKey = (ref: AssignmentRef): string => `${ref.node}/${ref.module}`;
export const holdingKey = (seatId: string, scopeKey: string): string => `${seatId}@${scopeKey}`;

/** A seat by its name or any former name. */
export const seatNamed = (state: MeshState, name: string): SeatState | undefined => {
  for (const seat of state.seats.values()) if (seat.name === name || seat.aliases.includes(name)) return seat;
  return undefined;
};

export const holderOf = (state: MeshState, seatId: string, scopeKey: string): AssignmentRef | undefined =>
  state.holdings.get(holdingKey(seatId, scopeKey));

/** The modules whose newest definition provides `provision`. */
export const providersOf = (state: MeshState, provision: string): ModuleState[] =>
  [...state.modules.values()].filter((m) => m.manifest.provides.some((p) => p.provision === provision));

const declaredSeat = (module: string, declaration: SeatDeclaration, existing: SeatState | undefined): SeatState => ({
  id: existing?.id ?? declaration.name,
  name: existing?.name ?? declaration.name,
  aliases: existing?.aliases ?? [],
  scope: declaration.scope,
  delivers: null,
  reserved: false,
  decided: `declared by module ${module}`,
  protocol: { accepts: declaration.accepts, emits: declaration.emits, serves: declaration.serves },
  definer: { kind: 'module', module },
});

/**
 * Folds one event into the state, in place: the fold owns its state. Never throws; an event that
 * does not apply (a release of a seat no longer held) changes nothing.
 */
export const evolveMesh = (state: MeshState, event: StoredMeshEvent): MeshState => {
  state.seq = Math.max(state.seq, event.seq);
  state.commands.set(event.commandId, { seq: event.seq, aggregate: event.aggregate });
  state.versions.set(event.aggregate, event.version);
  switch (event.type) {
    case 'seat.defined': {
      const data = event.data;
      state.seats.set(data.seat, {
        id: data.seat,
        name: data.name,
        aliases: [],
        scope: data.scope,
        delivers: data.delivers,
        reserved: data.reserved,
        decided: data.decided,
        protocol: data.protocol,
        definer: { kind: 'system' },
      });
      break;
    }
    case 'seat.renamed': {
      const data = event.data;
      const seat = state.seats.get(data.seat);
      if (seat) {
        seat.aliases = [...seat.aliases.filter((a) => a !== data.to), data.from];
        seat.name = data.to;
      }
      break;
    }
    case 'seat.handed-over':
    case 'seat.held': {
      const data = event.data;
      const to = event.type === 'seat.handed-over' ? event.data.to : event.data;
      state.holdings.set(holdingKey(data.seat, data.scopeKey), { node: to.node, module: to.module });
      break;
    }
    case 'seat.released': {
      const data = event.data;
      const key = holdingKey(data.seat, data.scopeKey);
      const holder = state.holdings.get(key);
      if (holder && holder.node === data.node && holder.module === data.module) state.holdings.delete(key);
      break;
    }
    case 'module.registered': {
      const data = event.data;
      const previous = state.modules.get(data.module);
      state.modules.set(data.module, { name: data.module, definitionVersion: data.definitionVersion, digest: data.digest, manifest: data.manifest });
      const declared = new Set<string>();
      for (const declaration of data.manifest.seats) {
        const existing = seatNamed(state, declaration.name);
        const seat = declaredSeat(data.module, declaration, existing);
        state.seats.set(seat.id, seat);
        declared.add(seat.id);
      }
      // A seat the module no longer declares leaves the set with it.
      for (const declaration of previous?.manifest.seats ?? []) {
        const seat = seatNamed(state, declaration.name);
        if (seat && seat.definer.kind === 'module' && seat.definer.module === data.module && !declared.has(seat.id)) state.seats.delete(seat.id);
      }
      break;
    }
    case 'node.added': {
      const data = event.data;
      state.nodes.set(data.node, { ...state.nodes.get(data.node), name: data.node, root: data.root, address: data.address });
      break;
    }
    case 'enrolment.token-issued': {
      const data = event.data;
      state.enrolmentTokens.set(data.tokenId, { tokenId: data.tokenId, verifier: data.verifier, node: data.node, expiresAt: data.expiresAt, ...(data.publicKey ? { publicKey: data.publicKey } : {}) });
      break;
    }
    case 'node.enrolled': {
      const data = event.data;
      const token = state.enrolmentTokens.get(data.tokenId);
      if (token) token.spentBy = data.node;
      const node = state.nodes.get(data.node) ?? { name: data.node, root: DEFAULT_NODE_ROOT, address: null };
      state.nodes.set(data.node, { ...node, publicKey: data.publicKey, ...(data.busKey ? { busKey: data.busKey } : {}) });
      break;
    }
    case 'operator.added': {
      const data = event.data;
      state.operators.set(data.operator, { operator: data.operator, publicKey: data.publicKey, revoked: false });
      break;
    }
    case 'operator.revoked': {
      const data = event.data;
      const operator = state.operators.get(data.operator);
      if (operator) operator.revoked = true;
      break;
    }
    case 'fact.applied':
    case 'fact.refused':
    case 'fact.crash-looping':
    case 'fact.stopped':
      evolveFacts(state.facts, event);
      break;
    case 'assignment.created': {
      const data = event.data;
      state.assignments.set(assignmentKey(data), {
        module: data.module,
        node: data.node,
        definitionVersion: data.definitionVersion,
        resolutions: data.resolutions,
        pins: data.pins,
        values: data.values,
        placements: data.placements,
      });
      break;
    }
    case 'declaration.refused': {
      const data = event.data;
      state.declarationRefusals.set(data.node, { reason: data.reason, seq: event.seq, derivedFromSeq: data.derivedFromSeq });
      break;
    }
    case 'assignment.removed': {
      const data = event.data;
      state.assignments.delete(assignmentKey(data));
      break;
    }
    case 'source.moved':
    case 'build.submitted':
    case 'build.succeeded':
    case 'build.failed':
    case 'module.rollout-set':
      evolveBuilds(state.builds, event);
      break;
    default:
      break;
  }
  return state;
};
