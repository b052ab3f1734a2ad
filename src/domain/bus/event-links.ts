import { registeredModules } from '../catalogue/state.js';
import type { MeshState } from '../mesh/state.js';
import { allSeats } from '../seats/state.js';
import { consumedSubjects, eventSubject } from './subjects.js';

// Which consumed events some registered module emits, across the whole catalogue (design 32 §1,
// issue 127 of the seeds: 37 manifests whose subscriptions matched nothing, every log quiet). A
// consume is set beside every emitter's derived subject: one that matches none is a finding that
// stands until an emitter registers; an emit nobody consumes is listed, and is no fault. The
// controller asks this of its fold, `mesh status` and `mesh events dangling` of the projections:
// one function, the same answer.

export interface EventDeclarations {
  module: string;
  emits: readonly string[];
  consumes: readonly string[];
}

export interface SeatEvents {
  seat: string;
  emits: readonly string[];
}

export interface DanglingConsume {
  consumer: string;
  /** the name as the manifest declares it */
  declared: string;
  /** what it derives to on the wire */
  subjects: string[];
  why: string;
}

export interface UnheardEmit {
  emitter: string;
  event: string;
  subject: string;
}

export interface EventLinks {
  dangling: DanglingConsume[];
  unheard: UnheardEmit[];
}

/** NATS subject matching: `*` one token, `>` the rest (at least one). */
export const subjectMatches = (filter: string, subject: string): boolean => {
  const f = filter.split('.');
  const s = subject.split('.');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (f[i] !== '*' && f[i] !== s[i]) return false;
  }
  return f.length === s.length;
};

const seatEventSubject = (prefix: string, seat: string, verb: string): string => `${prefix}.seat.${seat}.event.${verb}`;

const whyNothing = (declared: string, modules: ReadonlyMap<string, EventDeclarations>, seats: readonly SeatEvents[]): string => {
  const [emitter = '', ...rest] = declared.split('.');
  const event = rest.join('.') || '**';
  if (emitter === '*' || emitter === '**') return `no registered module emits ${event}`;
  const module = modules.get(emitter);
  const seat = seats.find((s) => s.seat === emitter && s.emits.length > 0);
  const seatNote = seat ? `; seat ${emitter}'s events (${seat.emits.join(', ')}) are published on the seat's own subjects, which a consume <emitter>.<event> does not derive to` : '';
  if (!module) return `no module named ${emitter} is registered${seatNote}`;
  if (module.emits.length === 0) return `${emitter} is registered and emits nothing${seatNote}`;
  return `${emitter} emits ${module.emits.join(', ')}, none of which is ${event}${seatNote}`;
};

/** Every consume no emitter answers, and every emit nobody consumes. */
export const eventLinks = (input: { modules: readonly EventDeclarations[]; seats: readonly SeatEvents[]; prefix?: string }): EventLinks => {
  const prefix = input.prefix ?? 'mesh';
  const byName = new Map(input.modules.map((m) => [m.module, m]));
  const emitted = [
    ...input.modules.flatMap((m) => m.emits.map((event) => ({ emitter: m.module, event, subject: eventSubject(prefix, m.module, event), seat: false }))),
    ...input.seats.flatMap((s) => s.emits.map((verb) => ({ emitter: s.seat, event: verb, subject: seatEventSubject(prefix, s.seat, verb), seat: true }))),
  ];
  const heard = new Set<string>();
  const dangling: DanglingConsume[] = [];
  for (const consumer of [...input.modules].sort((a, b) => a.module.localeCompare(b.module))) {
    for (const declared of consumer.consumes) {
      const subjects = consumedSubjects(prefix, [declared]);
      const matched = emitted.filter((e) => subjects.some((filter) => subjectMatches(filter, e.subject)));
      for (const e of matched) heard.add(e.subject);
      if (matched.length === 0) dangling.push({ consumer: consumer.module, declared, subjects, why: whyNothing(declared, byName, input.seats) });
    }
  }
  const unheard = emitted
    .filter((e) => !e.seat && !heard.has(e.subject))
    .map(({ emitter, event, subject }) => ({ emitter, event, subject }))
    .sort((a, b) => a.subject.localeCompare(b.subject));
  return { dangling, unheard };
};

/** One line for a person: the consumer, the declared name, the derived subject and why it matches nothing. */
export const describeDangling = (d: DanglingConsume): string =>
  `${d.consumer} consumes ${d.declared} (${d.subjects.join(', ')}), which matches nothing: ${d.why}; register a module that emits it, or correct the name`;

/** The catalogue's event links as the controller's fold holds it. */
export const eventLinksOf = (state: MeshState, prefix = 'mesh'): EventLinks =>
  eventLinks({
    modules: [...registeredModules(state.catalogue)].map((m) => ({ module: m.name, emits: m.manifest.emits, consumes: m.manifest.consumes })),
    seats: [...allSeats(state.seats)].map((s) => ({ seat: s.name, emits: s.protocol.emits })),
    prefix,
  });
