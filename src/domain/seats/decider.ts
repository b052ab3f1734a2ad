import { z } from 'zod';
import type { Decision } from '../decision.js';
import { isAssigned } from '../assignments/state.js';
import type { MeshState } from '../mesh/state.js';
import { nameProblem } from '../limits.js';
import { Refusal, refuseIfAny } from '../refusal.js';
import { canHoldProblems } from './can-hold.js';
import { SeatDefined, SeatHandedOver, SeatRenamed, seatAggregate, seatProtocol, type AssignmentRef } from './events.js';
import { allSeats, holderOf, seatById, seatNamed } from './state.js';
import { hasSystemPrefix, type SystemSeat } from './system-seats.js';

const systemSeatSchema: z.ZodType<SystemSeat> = z.strictObject({
  name: z.string(),
  scope: z.enum(['mesh', 'node']),
  delivers: z.string().nullable(),
  reserved: z.boolean(),
  decided: z.string(),
  protocol: seatProtocol,
});

export const defineSystemSeatSchema = z.strictObject({ type: z.literal('define-system-seat'), seat: systemSeatSchema });
export type DefineSystemSeat = z.infer<typeof defineSystemSeatSchema>;

export const renameSeatSchema = z.strictObject({ type: z.literal('rename-seat'), seat: z.string(), to: z.string() });
export type RenameSeat = z.infer<typeof renameSeatSchema>;

const ref = z.strictObject({ node: z.string(), module: z.string() });

export const handOverSeatSchema = z.strictObject({
  type: z.literal('hand-over-seat'),
  seat: z.string(),
  to: ref,
  /**
   * The holder the operator saw when deciding (null: unheld). Checked, so two operators handing
   * one seat over at once cannot both win: the second is refused against the new holder.
   */
  expectedHolder: ref.nullable().optional(),
});
export type HandOverSeat = z.infer<typeof handOverSeatSchema>;

const sameRef = (a: AssignmentRef | null | undefined, b: AssignmentRef | null | undefined): boolean =>
  (a ?? null) === null ? (b ?? null) === null : a?.node === b?.node && a?.module === b?.module;
const show = (ref: AssignmentRef | null | undefined): string => (ref ? `${ref.node}/${ref.module}` : 'nobody');

export const decideDefineSystemSeat = (command: DefineSystemSeat, state: MeshState): Decision => {
  const { seat } = command;
  if (seatById(state.seats, seat.name)) return { aggregate: seatAggregate(seat.name), events: [], summary: `${seat.name} is already defined` };
  return {
    aggregate: seatAggregate(seat.name),
    events: [{ type: SeatDefined.type, data: { seat: seat.name, name: seat.name, scope: seat.scope, delivers: seat.delivers, reserved: seat.reserved, decided: seat.decided, protocol: seat.protocol } }],
    summary: `${seat.name} defined`,
  };
};

export const decideRenameSeat = (command: RenameSeat, state: MeshState): Decision => {
  const seat = seatNamed(state.seats, command.seat);
  if (!seat) {
    throw new Refusal(`renaming seat ${command.seat}`, [{ what: command.seat, why: 'no such seat', remedy: `name one of: ${[...allSeats(state.seats)].map((s) => s.name).sort().join(', ')}`, missing: 'seat' }]);
  }
  const problems = [];
  const taken = seatNamed(state.seats, command.to);
  if (taken && taken.id !== seat.id) problems.push({ what: command.to, why: `the name is taken by seat ${taken.name}`, remedy: 'choose a name no seat has or had' });
  const wantsPrefix = seat.definer.kind === 'system' ? (seat.scope === 'mesh' ? 'mesh-' : 'node-') : undefined;
  if (wantsPrefix && !command.to.startsWith(wantsPrefix)) {
    problems.push({ what: command.to, why: `${seat.name} is the mesh's own ${seat.scope}-scoped seat, so its name starts with ${wantsPrefix} (ADR 0121)`, remedy: `choose a name starting with ${wantsPrefix}` });
  }
  if (!wantsPrefix && hasSystemPrefix(command.to)) {
    problems.push({ what: command.to, why: 'mesh- and node- name the mesh\'s own seats (ADR 0121)', remedy: 'choose a name without the prefix' });
  }
  const badName = nameProblem('seat', command.to, command.to.length > 40 ? 'NEW-NAME' : command.to);
  if (badName) problems.push(badName);
  refuseIfAny(`renaming seat ${seat.name}`, problems);
  if (seat.name === command.to) return { aggregate: seatAggregate(seat.id), events: [], summary: `${seat.name} already has that name` };
  return {
    aggregate: seatAggregate(seat.id),
    events: [{ type: SeatRenamed.type, data: { seat: seat.id, from: seat.name, to: command.to } }],
    summary: `${seat.name} renamed ${command.to}; "${seat.name}" keeps resolving as an alias`,
  };
};

export const decideHandOverSeat = (command: HandOverSeat, state: MeshState): Decision => {
  const subject = `handing over seat ${command.seat} to ${show(command.to)}`;
  const seat = seatNamed(state.seats, command.seat);
  if (!seat) throw new Refusal(subject, [{ what: command.seat, why: 'no such seat', remedy: `name one of: ${[...allSeats(state.seats)].map((s) => s.name).sort().join(', ')}`, missing: 'seat' }]);
  if (!isAssigned(state.assignments, command.to)) {
    throw new Refusal(subject, [{ what: show(command.to), why: `module ${command.to.module} is not assigned to node ${command.to.node}`, remedy: `assign it first: mesh assign ${command.to.module} ${command.to.node}`, missing: 'assignment' }]);
  }
  const scopeKey = seat.scope === 'mesh' ? 'mesh' : command.to.node;
  const current = holderOf(state.seats, seat.id, scopeKey);
  const problems = canHoldProblems(state, command.to.module, seat, seat.name);
  if (command.expectedHolder !== undefined && !sameRef(command.expectedHolder, current)) {
    problems.push({
      what: seat.name,
      why: `${seat.name} is held by ${show(current)} now, not by ${show(command.expectedHolder)} as this handover expected: it was handed over meanwhile`,
      remedy: 'look at mesh seats and hand it over again if you still mean to',
    });
  }
  refuseIfAny(subject, problems);
  if (sameRef(current, command.to)) return { aggregate: seatAggregate(seat.id), events: [], summary: `${seat.name} is already held by ${show(current)}` };
  return {
    aggregate: seatAggregate(seat.id),
    events: [{ type: SeatHandedOver.type, data: { seat: seat.id, scopeKey, from: current ?? null, to: command.to } }],
    summary: `${seat.name} handed over from ${show(current)} to ${show(command.to)}`,
  };
};
