import { jetstreamManager } from '@nats-io/jetstream';
import { loadConfig } from '../config.js';
import { connectAsOperator } from './bus-connection.js';
import type { EventLog } from '../adapters/eventlog/event-log.js';
import { warnPassed, type PassedCommit } from '../adapters/eventlog/chain-reader.js';
import { JetStreamEventLog } from '../adapters/eventlog/jetstream-log.js';
import { verifyLogStream } from '../adapters/eventlog/log-stream.js';
import type { StoredMeshEvent } from '../domain/registry.js';
import { meshEventRegistry, type MeshEvent } from '../domain/registry.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { logHeader, print, printPassed } from './log.js';
import { output } from './output.js';
import { withReads } from './reads.js';
import { findSeat } from '../projections/mesh/seats.js';

// `mesh history AGGREGATE`: everything that happened to one node, module, seat or assignment, in
// log order, with who caused it and why — read from the log itself. A node's history includes
// its assignments and the facts stated about it; a module's, its assignments everywhere; a seat's,
// every holding of it. A commit among them that does not verify stops it (exit 7, naming the
// sequence); one an operator voided is printed in its place as passed by.

const related = (aggregate: string): string[] => {
  const [kind, ...id] = aggregate.split('.');
  const name = id.join('.');
  switch (kind) {
    case 'node':
      return [aggregate, `assignment.${name}.*`, `fact.${name}`];
    case 'module':
      return [aggregate, `assignment.*.${name}`];
    default:
      return [aggregate];
  }
};

/**
 * Everything that happened to one aggregate and what belongs to it, in log order. A commit among
 * them that does not verify stops the read (naming it); each one an operator voided is handed to
 * `onPassed`, once. A seat's history needs `seatIdOf`: a seat is filed under its first name, which
 * the seats projection knows from any of its names.
 */
export const readHistory = async (
  log: EventLog<MeshEvent>,
  aggregate: string,
  options: { onPassed?: (passed: PassedCommit) => void; seatIdOf?: (name: string) => Promise<string | undefined>; fromSeq?: number } = {},
): Promise<StoredMeshEvent[]> => {
  const onPassed = options.onPassed ?? warnPassed;
  // From a sequence: what happened since a reader last asked (the console keeps the rest).
  const from = options.fromSeq !== undefined ? { fromSeq: options.fromSeq } : {};
  const events: StoredMeshEvent[] = [];
  const told = new Set<number>();
  const pass = (passed: PassedCommit): void => {
    if (told.has(passed.seq)) return;
    told.add(passed.seq);
    onPassed(passed);
  };
  if (aggregate.startsWith('seat.')) {
    // A seat is filed under its first name; its holdings under the assignments that held it.
    const name = aggregate.slice('seat.'.length);
    if (!options.seatIdOf) throw new Error(`the history of ${aggregate} needs a way to find the seat by its name`);
    const seatId = await options.seatIdOf(name);
    if (seatId === undefined) throw new NotFoundError(`no seat ${name} is known, by that name or a former one`, { aggregate, seat: name });
    for await (const event of log.read({ aggregate: `seat.${seatId}`, onPassed: pass, ...from })) events.push(event);
    for await (const event of log.read({ aggregate: 'assignment', onPassed: pass, ...from })) {
      if (heldSeatOf(event) === seatId) events.push(event);
    }
  } else {
    for (const filter of related(aggregate)) for await (const event of log.read({ aggregate: filter, onPassed: pass, ...from })) events.push(event);
    // A handover is filed under the seat, but it changed what the node (or module) it took the seat
    // from, and the one it gave it to, holds.
    const [kind, ...id] = aggregate.split('.');
    const name = id.join('.');
    if (kind === 'node' || kind === 'module') {
      for await (const event of log.read({ aggregate: 'seat', onPassed: pass, ...from })) if (handedOverAt(event, kind, name)) events.push(event);
    }
  }
  return events.sort((a, b) => a.seq - b.seq || a.index - b.index);
};

/** Whether `event` is a handover from or to an assignment on node `name` (or of module `name`). */
const handedOverAt = (event: StoredMeshEvent, kind: 'node' | 'module', name: string): boolean => {
  if (event.type !== 'seat.handed-over') return false;
  return [event.data.from, event.data.to].some((holder) => holder !== null && holder[kind] === name);
};

/** The seat a seat.held or seat.released event is about; undefined for any other event. */
const heldSeatOf = (event: StoredMeshEvent): string | undefined => (event.type === 'seat.held' || event.type === 'seat.released' ? event.data.seat : undefined);

/** A seat's id (its first name) from any of its names, as the seats projection holds them. */
const seatIdFromProjection = (name: string): Promise<string | undefined> => withReads(['seats'], {}, async (session) => (await findSeat(session, name))?.id);


/** The kinds of aggregate a bare name may name, in the order candidates are listed. */
const NAMED_KINDS = ['node', 'module', 'seat', 'operator'] as const;

/** Whether the log holds any event of `aggregate`. */
const inLog = async (log: EventLog<MeshEvent>, aggregate: string): Promise<boolean> => {
  for await (const event of log.read({ aggregate, onPassed: () => undefined })) return event !== undefined;
  return false;
};

/**
 * The aggregates `name` may mean: as given when it names one (node.alpha); an assignment for
 * NODE/MODULE; otherwise every node, module, seat (by any of its names) and operator of that name.
 */
export const candidatesFor = async (log: EventLog<MeshEvent>, name: string, seatIdOf: (name: string) => Promise<string | undefined>): Promise<string[]> => {
  if (name.includes('.')) return [name];
  const assignment = /^([^/]+)\/([^/]+)$/.exec(name);
  if (assignment) return [`assignment.${assignment[1]}.${assignment[2]}`];
  const found: string[] = [];
  for (const kind of NAMED_KINDS) {
    const known = kind === 'seat' ? (await seatIdOf(name)) !== undefined : await inLog(log, `${kind}.${name}`);
    if (known) found.push(`${kind}.${name}`);
  }
  return found;
};

export const historyCommand = async (name: string, values: { json?: true; output?: string }): Promise<number> => {
  const out = output(values.json ?? false, values.output);
  const config = loadConfig();
  const nc = await connectAsOperator(config, 'mesh-history');
  try {
    const settings = { stream: config.logStream, subjectPrefix: config.logSubjectPrefix };
    await verifyLogStream(await jetstreamManager(nc), settings, config.natsUrl);
    const log = new JetStreamEventLog(nc, { ...settings, registry: meshEventRegistry() });
    const candidates = await candidatesFor(log, name, seatIdFromProjection);
    const aggregate = candidates[0];
    if (aggregate === undefined) throw new NotFoundError(`nothing is known of ${name}: no node, module, seat or operator of that name`, { name });
    if (candidates.length > 1) throw new ValidationError(`${name} names more than one thing: ${candidates.join(', ')}; ask for one of them, e.g. mesh history ${candidates[0]}`, { field: 'name', candidates });
    const passed: PassedCommit[] = [];
    const events = await readHistory(log, aggregate, { onPassed: (commit) => passed.push(commit), seatIdOf: seatIdFromProjection });
    if (events.length === 0 && passed.length === 0) throw new NotFoundError(`nothing is known of ${aggregate}: the log holds no event of it`, { aggregate });
    if (!out.json) out.line(logHeader(out));
    // Each voided commit in its place among the events: what was passed by is seen.
    passed.sort((a, b) => a.seq - b.seq);
    for (const event of events) {
      while (passed.length > 0 && (passed[0] as PassedCommit).seq < event.seq) printPassed(out, passed.shift() as PassedCommit);
      print(out, event);
    }
    for (const commit of passed) printPassed(out, commit);
    return 0;
  } finally {
    await nc.close();
  }
};
