import { z } from 'zod';
import type { Decision } from '../decision.js';
import type { EventOf } from '../events/registry.js';
import { manifestOf, moduleNamed, registeredModuleNames } from '../catalogue/state.js';
import type { MeshState } from '../mesh/state.js';
import { nodeNamed } from '../nodes/state.js';
import { allSeats, heldBy, holderOf, seatNamed } from '../seats/state.js';
import { refuseIfAny, type Problem } from '../refusal.js';
import { canHoldProblems } from '../seats/can-hold.js';
import type { AssignmentRef } from '../seats/events.js';
import { AssignmentCreated, AssignmentRemoved, SeatHeld, SeatReleased, assignmentAggregate } from './events.js';
import { resolveRequirements } from './resolve.js';
import { answeredBy, assignmentOf, assignmentsOf } from './state.js';
import { claimRoutes } from '../routes/grants.js';
import { placeProblems } from './places.js';

// Command schemas check shape only: every rule about what the values mean is the decider's, so
// its refusals stay the ones an operator knows.

export const assignSchema = z.strictObject({
  type: z.literal('assign'),
  module: z.string(),
  node: z.string(),
  hold: z.array(z.string()),
  pins: z.record(z.string(), z.strictObject({ node: z.string(), module: z.string() })),
  values: z.record(z.string(), z.string()),
  placements: z.record(z.string(), z.string()),
});
export type Assign = z.infer<typeof assignSchema>;

export const unassignSchema = z.strictObject({ type: z.literal('unassign'), module: z.string(), node: z.string() });
export type Unassign = z.infer<typeof unassignSchema>;

const show = (ref: AssignmentRef): string => `${ref.node}/${ref.module}`;

export const decideAssign = (command: Assign, state: MeshState): Decision => {
  const subject = `assigning ${command.module} to ${command.node}`;
  const problems: Problem[] = [];
  const module = moduleNamed(state.catalogue, command.module);
  const registered = [...registeredModuleNames(state.catalogue)].sort();
  if (!module) problems.push({ what: command.module, why: 'no such module is registered', remedy: `register it: mesh module register <manifest.json>${registered.length > 0 ? ` (registered: ${registered.join(', ')})` : ''}`, missing: 'module' });
  const node = nodeNamed(state.nodes, command.node);
  if (!node) problems.push({ what: command.node, why: 'no such node', remedy: `add it: mesh node add ${command.node}`, missing: 'node' });
  else if (node.cordoned) problems.push({ what: command.node, why: `node ${command.node} is cordoned: it takes no new assignment (what it runs keeps running)`, remedy: `assign it to another node, or: mesh node uncordon ${command.node}` });
  const existing = assignmentOf(state.assignments, command);
  if (existing) {
    problems.push({ what: `${command.node}/${command.module}`, why: `${command.node} already runs ${command.module}, and one node runs one of each (ADR 0115)`, remedy: 'assign it to another node, or unassign it first' });
  }
  refuseIfAny(subject, problems);
  if (!module) return { aggregate: assignmentAggregate(command.node, command.module), events: [], summary: '' };
  const manifest = module.manifest;

  const requirementNames = new Set(manifest.requires.map((r) => r.name));
  for (const [flag, entries] of [
    ['--pin', command.pins],
    ['--set', command.values],
    ['--place', command.placements],
  ] as const) {
    for (const name of Object.keys(entries)) {
      if (!requirementNames.has(name)) problems.push({ what: `${flag} ${name}`, why: `${command.module} has no requirement named ${name}`, remedy: `its requirements are: ${[...requirementNames].join(', ') || 'none'}` });
    }
  }
  for (const name of Object.keys(command.placements)) {
    const requirement = manifest.requires.find((r) => r.name === name);
    if (requirement && !(requirement.provider === 'host' && requirement.contract === 'directory')) {
      problems.push({ what: `--place ${name}`, why: `${name} is not a host directory`, remedy: 'only a directory can be placed' });
    }
  }
  problems.push(...placeProblems(state, command));
  for (const name of Object.keys(command.values)) {
    const requirement = manifest.requires.find((r) => r.name === name);
    if (requirement?.secret === true || requirement?.contract === 'secret') {
      problems.push({ what: `--set ${name}`, why: `${name} is a secret, and a secret never enters the log (ADR 0113)`, remedy: 'deliver it to the vault, which seals it to the nodes that need it' });
    }
  }
  for (const name of Object.keys(command.pins)) {
    const requirement = manifest.requires.find((r) => r.name === name);
    if (requirement?.contract === 'secret') problems.push({ what: `--pin ${name}`, why: 'a secret is always answered by the holder of mesh-vault; it cannot be pinned (R110.8)', remedy: 'remove the pin' });
  }

  const { resolutions, problems: unresolved } = resolveRequirements(state, command, manifest.requires);
  problems.push(...unresolved);

  const holds: EventOf<typeof SeatHeld>[] = [];
  for (const name of command.hold) {
    const seat = seatNamed(state.seats, name);
    if (!seat) {
      problems.push({ what: `--hold ${name}`, why: 'no such seat', remedy: `name one of: ${[...allSeats(state.seats)].map((s) => s.name).sort().join(', ')}`, missing: 'seat' });
      continue;
    }
    problems.push(...canHoldProblems(state, command.module, seat, `--hold ${name}`));
    const scopeKey = seat.scope === 'mesh' ? 'mesh' : command.node;
    const holder = holderOf(state.seats, seat.id, scopeKey);
    if (holder) {
      problems.push({ what: `--hold ${name}`, why: `${seat.name} is held by ${show(holder)}`, remedy: `assign without --hold, then: mesh seat handover ${seat.name} --to ${command.node}/${command.module}` });
      continue;
    }
    holds.push({ type: SeatHeld.type, data: { seat: seat.id, scopeKey, node: command.node, module: command.module } });
  }
  if (manifest.provides.some((p) => p.provision === 'secret')) {
    const vault = seatNamed(state.seats, 'mesh-vault');
    if (vault && !command.hold.some((name) => seatNamed(state.seats, name)?.id === vault.id)) {
      problems.push({ what: command.module, why: 'it provides secret, which only the holder of mesh-vault may (R110.8)', remedy: `assign it with --hold ${vault.name}` });
    }
  }
  // ADR 0007: the routes ask for names the proxy hands back (answer-consumer), unique across the mesh.
  const routes = claimRoutes(state, command, manifest, node?.publicDomain);
  problems.push(...routes.problems);
  refuseIfAny(subject, problems);

  const held = holds.map((event) => event.data.seat);
  return {
    aggregate: assignmentAggregate(command.node, command.module),
    events: [
      {
        type: AssignmentCreated.type,
        data: { module: command.module, node: command.node, definitionVersion: module.definitionVersion, resolutions, pins: command.pins, values: Object.fromEntries(resolutions.flatMap((r) => (r.answer.kind === 'value' && r.answer.from === 'assignment' ? [[r.requirement, r.answer.value]] : []))), placements: command.placements },
      },
      ...holds,
    ],
    summary: `${command.module} assigned to ${command.node} (definition version ${module.definitionVersion}); ${resolutions.length} requirements resolved${held.length > 0 ? `; holds ${held.join(', ')}` : ''}${routes.asks.length > 0 ? `; public names ${routes.asks.map((a) => a.publicName).join(', ')} asked of the holder of mesh-proxy` : ''}`,
  };
};

export const decideUnassign = (command: Unassign, state: MeshState): Decision => {
  const subject = `unassigning ${command.module} from ${command.node}`;
  const assignment = assignmentOf(state.assignments, command);
  if (!assignment) {
    const where = assignmentsOf(state.assignments, command.module).map((a) => a.node);
    refuseIfAny(subject, [{ what: `${command.node}/${command.module}`, why: `${command.module} is not assigned to ${command.node}`, remedy: where.length > 0 ? `it runs on: ${where.join(', ')}` : 'nothing to do', missing: 'assignment' }]);
  }
  const dependents = answeredBy(state.assignments, command);
  refuseIfAny(
    subject,
    dependents.map((d) => ({
      what: `${d.node}/${d.module}`,
      why: `it is answered by ${command.node}/${command.module}`,
      remedy: `unassign ${d.node}/${d.module} first, or assign another provider and re-assign it`,
    })),
  );
  const releases: EventOf<typeof SeatReleased>[] = heldBy(state.seats, command).map(({ seat, scopeKey }) => ({
    type: SeatReleased.type,
    data: { seat, scopeKey, node: command.node, module: command.module },
  }));
  return {
    aggregate: assignmentAggregate(command.node, command.module),
    events: [{ type: AssignmentRemoved.type, data: { module: command.module, node: command.node } }, ...releases],
    summary: `${command.module} unassigned from ${command.node}${stopsOn(state, command)}${releases.length > 0 ? `; released ${releases.map((r) => r.data.seat).join(', ')}` : ''}`,
  };
};

/** What stops on the node when the assignment goes: the module's processes and containers, named. */
const stopsOn = (state: MeshState, command: Unassign): string => {
  const resources = manifestOf(state.catalogue, command.module)?.resources;
  const stopping = [...(resources?.processes ?? []).map((p) => `process ${p.name}`), ...(resources?.containers ?? []).map((c) => `container ${c.name}`)];
  return `; stops on ${command.node}: ${stopping.length > 0 ? stopping.join(', ') : 'nothing runs (it has no process or container)'}`;
};
