// Local names become subjects here and nowhere else (design 32 §1): a module declares `emits:
// order.placed` and `consumes: billing.order.placed`, the mesh derives the wire's own names.
// `*` is one name and `**` the rest in the mesh's spelling; on NATS they are `*` and `>`.

export const eventSubject = (prefix: string, module: string, event: string): string => `${prefix}.mod.${module}.event.${event}`;

/** A consumed pattern `<emitter>.<event>` as the subjects it matches; `**` alone is every event, seats' too. */
export const consumedSubjects = (prefix: string, patterns: readonly string[]): string[] => {
  const subjects = new Set<string>();
  for (const pattern of patterns) {
    const tokens = pattern.split('.').map((token) => (token === '**' ? '>' : token));
    if (tokens.length === 1 && tokens[0] === '>') {
      subjects.add(`${prefix}.mod.*.event.>`);
      subjects.add(`${prefix}.seat.*.event.>`);
      continue;
    }
    const [emitter = '*', ...event] = tokens;
    subjects.add(`${prefix}.mod.${emitter === '>' ? '*' : emitter}.event.${event.length > 0 ? event.join('.') : '>'}`);
  }
  return [...subjects].sort();
};

/** A module's durable consumer on EVENTS: `<node>_<module>`, since a durable name has no dots. */
export const moduleConsumerName = (node: string, module: string): string => `${node}_${module}`;

/** A module's inbox prefix, module then node (design 25 §4). */
export const moduleInbox = (module: string, node: string): string => `_INBOX.${module}.${node}`;

/**
 * The first word of every inbox that is not a module's (users.ts): a module of one of these names
 * would be given another principal's inbox (`host` on node beta reads host beta's answers), so
 * registering one is refused.
 */
export const RESERVED_INBOX_HEADS: readonly string[] = ['controller', 'fold-snapshots', 'host', 'person', 'enrol'];

/** A seat's work queue: one stream per seat's `accept` branch (DESIGN.md decision 5). */
export const seatStreamName = (prefix: string, seat: string): string => (prefix === 'mesh' ? `SEAT_${seat}` : `SEAT_${prefix}_${seat}`);

/** The consumer every holder of a seat pulls its work from: each piece of work goes to one of them. */
export const SEAT_HOLDERS_CONSUMER = 'holders';

/**
 * Where the controller keeps the snapshot of its fold of a log: an object store bucket named after
 * the log's stream, so a mesh under other names (a test's) never reads another's.
 */
export const foldSnapshotBucket = (logStream: string): string => (logStream === 'LOG' ? 'mesh-fold-snapshots' : `mesh-fold-snapshots_${logStream}`);
