import type { Requirement } from '../catalogue/manifest.js';
import { moduleNamed, providersOf } from '../catalogue/state.js';
import type { MeshState } from '../mesh/state.js';
import { nodeNamed } from '../nodes/state.js';
import { allSeats, holderOf, seatNamed, type SeatState } from '../seats/state.js';
import { assignmentsOf } from './state.js';
import type { Problem } from '../refusal.js';
import { couldHold } from '../seats/can-hold.js';
import type { AssignmentRef } from '../seats/events.js';
import type { Resolution } from './events.js';

// Installing a module on a node resolves every requirement or refuses, naming every unresolved
// one and what would answer it, all at once (ADR 0112). Never guessed (ADR 0009).

export interface ResolutionInput {
  module: string;
  node: string;
  pins: Record<string, AssignmentRef>;
  values: Record<string, string>;
  placements: Record<string, string>;
}

const show = (ref: AssignmentRef): string => `${ref.node}/${ref.module}`;
const scopeKeyOf = (seat: SeatState, node: string): string => (seat.scope === 'mesh' ? 'mesh' : node);

/** Assignments whose module provides the provision: the candidates a requirement may be answered by. */
const providerAssignments = (state: MeshState, provision: string): AssignmentRef[] =>
  providersOf(state.catalogue, provision)
    .flatMap((module) => assignmentsOf(state.assignments, module.name))
    .map((a) => ({ node: a.node, module: a.module }))
    .sort((a, b) => show(a).localeCompare(show(b)));

const deliveringSeatHolders = (state: MeshState, provision: string, node: string): AssignmentRef[] =>
  [...allSeats(state.seats)].filter((s) => s.delivers === provision).flatMap((s) => {
    const holder = holderOf(state.seats, s.id, scopeKeyOf(s, node));
    return holder ? [holder] : [];
  });

type Outcome = { resolution: Resolution } | { problem: Problem };

const resolveModuleRequirement = (state: MeshState, input: ResolutionInput, requirement: Requirement): Outcome => {
  const what = `requires ${requirement.name} (${requirement.contract})`;
  const base = { requirement: requirement.name, contract: requirement.contract, provider: 'module' as const };
  if (requirement.seat) {
    const seat = seatNamed(state.seats, requirement.seat);
    if (!seat) return { problem: { what, why: `it names seat ${requirement.seat}, which does not exist`, remedy: 'register the module that declares it, or fix the manifest' } };
    const holder = holderOf(state.seats, seat.id, scopeKeyOf(seat, input.node));
    if (!holder) {
      const candidates = couldHold(state, seat);
      return {
        problem: {
          what,
          why: `it is answered by the holder of ${seat.name}, and ${seat.name} is unheld${seat.scope === 'node' ? ` on ${input.node}` : ''}`,
          remedy: candidates.length > 0 ? `hand ${seat.name} to an assignment of ${candidates.join(' or ')} (mesh seat handover ${seat.name} --to NODE/MODULE)` : `register and assign a module that can hold ${seat.name}`,
        },
      };
    }
    if (requirement.contract === 'secret') {
      return { resolution: { ...base, answer: { kind: 'secret', name: `${input.node}-${input.module}/${requirement.name}`, seat: seat.id, holder } } };
    }
    return { resolution: { ...base, answer: { kind: 'assignment', node: holder.node, module: holder.module, via: 'seat', seat: seat.id } } };
  }
  const providers = providerAssignments(state, requirement.contract);
  const pin = input.pins[requirement.name];
  if (pin) {
    const pinned = providers.find((p) => p.node === pin.node && p.module === pin.module);
    if (!pinned) {
      return { problem: { what, why: `it is pinned to ${show(pin)}, which is not an assignment providing ${requirement.contract}`, remedy: providers.length > 0 ? `pin one of: ${providers.map(show).join(', ')}` : `assign a module that provides ${requirement.contract} first` } };
    }
    return { resolution: { ...base, answer: { kind: 'assignment', ...pinned, via: 'pin' } } };
  }
  const local = providers.filter((p) => p.node === input.node);
  if (local.length === 1 && local[0]) return { resolution: { ...base, answer: { kind: 'assignment', ...local[0], via: 'local' } } };
  if (local.length === 0 && providers.length === 1 && providers[0]) return { resolution: { ...base, answer: { kind: 'assignment', ...providers[0], via: 'only' } } };
  if (providers.length === 0) {
    const modules = providersOf(state.catalogue, requirement.contract).map((m) => m.name);
    return {
      problem: {
        what,
        why: `no assignment provides ${requirement.contract}`,
        remedy: modules.length > 0 ? `assign ${modules.join(' or ')} somewhere first` : `no registered module provides ${requirement.contract}; register one`,
      },
    };
  }
  const seatHolders = deliveringSeatHolders(state, requirement.contract, input.node).map(show);
  const candidates = [...(local.length > 1 ? local : providers)].map(show).sort((a, b) => Number(seatHolders.includes(b)) - Number(seatHolders.includes(a)));
  return {
    problem: {
      what,
      why: `${candidates.length} assignments provide ${requirement.contract}${local.length > 1 ? ` on ${input.node}` : ', none on this node'}; the mesh does not guess`,
      remedy: `choose one with --pin ${requirement.name}=NODE/MODULE: ${candidates.join(', ')}`,
    },
  };
};

const resolveHostRequirement = (state: MeshState, input: ResolutionInput, requirement: Requirement): Outcome => {
  const base = { requirement: requirement.name, contract: requirement.contract, provider: 'host' as const };
  switch (requirement.contract) {
    case 'directory': {
      const placed = input.placements[requirement.name];
      const root = nodeNamed(state.nodes, input.node)?.root ?? '/var/lib/mesh';
      return { resolution: { ...base, answer: { kind: 'directory', path: placed ?? `${root}/${input.module}/${requirement.name}`, placed: placed !== undefined } } };
    }
    case 'port':
      return { resolution: { ...base, answer: { kind: 'port', port: requirement.port ?? 0 } } };
    default:
      return { resolution: { ...base, answer: { kind: 'fact', fact: requirement.contract } } };
  }
};

const coerce = (raw: string, type: Requirement['type']): string | number | boolean | undefined => {
  switch (type) {
    case 'number':
      return Number.isFinite(Number(raw)) ? Number(raw) : undefined;
    case 'port': {
      const port = Number(raw);
      return Number.isInteger(port) && port > 0 && port < 65536 ? port : undefined;
    }
    case 'boolean':
      return raw === 'true' ? true : raw === 'false' ? false : undefined;
    default:
      return raw;
  }
};

const resolveOperatorRequirement = (input: ResolutionInput, requirement: Requirement): Outcome => {
  const what = `requires ${requirement.name} (an operator value)`;
  const base = { requirement: requirement.name, contract: requirement.contract, provider: 'operator' as const };
  const given = input.values[requirement.name];
  if (given !== undefined) {
    const value = coerce(given, requirement.type);
    if (value === undefined) return { problem: { what, why: `"${given}" is not a ${requirement.type}`, remedy: `pass --set ${requirement.name}=<a ${requirement.type}>` } };
    return { resolution: { ...base, answer: { kind: 'value', value, from: 'assignment' } } };
  }
  if (requirement.default !== undefined) return { resolution: { ...base, answer: { kind: 'value', value: requirement.default, from: 'default' } } };
  return { problem: { what, why: 'it has no default and the assignment sets none', remedy: `pass --set ${requirement.name}=VALUE` } };
};

/** A provider whose provision gives each consumer its own secret: one more requirement, named for the consumer. */
const perConsumerSecret = (state: MeshState, input: ResolutionInput, resolution: Resolution): Outcome | undefined => {
  if (resolution.answer.kind !== 'assignment') return undefined;
  const provider = moduleNamed(state.catalogue, resolution.answer.module);
  if (!provider?.manifest.provides.some((p) => p.provision === resolution.contract && p.perConsumerSecret)) return undefined;
  const requirement: Requirement = { name: `${resolution.requirement}-secret`, contract: 'secret', provider: 'module', seat: 'mesh-vault' };
  const outcome = resolveModuleRequirement(state, input, requirement);
  if ('resolution' in outcome && outcome.resolution.answer.kind === 'secret') {
    // Named for the consumer: the provider applies it, the consumer presents it; the vault makes it.
    outcome.resolution.answer.name = `${resolution.contract}/${input.node}-${input.module}`;
  }
  return outcome;
};

export const resolveRequirements = (state: MeshState, input: ResolutionInput, requirements: readonly Requirement[]): { resolutions: Resolution[]; problems: Problem[] } => {
  const resolutions: Resolution[] = [];
  const problems: Problem[] = [];
  const collect = (outcome: Outcome | undefined): void => {
    if (!outcome) return;
    if ('resolution' in outcome) resolutions.push(outcome.resolution);
    else problems.push(outcome.problem);
  };
  for (const requirement of requirements) {
    switch (requirement.provider) {
      case 'module': {
        const outcome = resolveModuleRequirement(state, input, requirement);
        collect(outcome);
        if ('resolution' in outcome) collect(perConsumerSecret(state, input, outcome.resolution));
        break;
      }
      case 'host':
        collect(resolveHostRequirement(state, input, requirement));
        break;
      case 'mesh':
        collect({ resolution: { requirement: requirement.name, contract: requirement.contract, provider: 'mesh', answer: { kind: 'identity', node: input.node, module: input.module, name: `${input.node}-${input.module}` } } });
        break;
      case 'operator':
        collect(resolveOperatorRequirement(input, requirement));
        break;
      default: {
        const unreachable: never = requirement.provider;
        throw new Error(`unknown provider kind ${String(unreachable)}`);
      }
    }
  }
  return { resolutions, problems };
};
