import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { ChainReader, heldError, rawOf, type PassedCommit } from '../adapters/eventlog/chain-reader.js';
import { JetStreamEventLog } from '../adapters/eventlog/jetstream-log.js';
import type { StoredEvent } from '../domain/events/envelope.js';
import { meshEventRegistry } from '../domain/registry.js';
import { CorruptEventError } from '../errors.js';
import { aggregateRegex, type IndexRow, type LogQuery } from '../projections/audit.js';

// `mesh log` without --follow: the audit projection (an index of the log: where each event
// stands and who caused it, no data) answers which events match; the log supplies their data.
// The matches are read a page at a time in log order; a page that names few commits gets each
// commit by its sequence, a page that names many reads the stretch of the log from its first to
// its last. Every event is checked against the index row that named it, so nothing is printed
// that the log does not hold.

/** A page naming more commits than this reads its stretch of the log instead of getting each commit. */
export const RANGE_ABOVE_COMMITS = 200;
/** Gets of single commits in flight at once. */
const GETS_IN_FLIGHT = 16;

/**
 * The commits an operator voided between the query's sequences (under its aggregate filter, when
 * it has one: a voided commit has no type or actor to filter by), in log order.
 */
export const voidsIn = async (source: LogSource, query: Pick<LogQuery, 'fromSeq' | 'toSeq' | 'aggregate'>): Promise<PassedCommit[]> => {
  const voids = await chainOf(source).voids();
  const filter = query.aggregate;
  const regex = filter === undefined ? undefined : aggregateRegex(filter);
  const admitted = (aggregate: string): boolean => filter === undefined || (regex === undefined ? aggregate === filter : new RegExp(regex).test(aggregate));
  return [...voids.values()].filter((v) => v.seq >= query.fromSeq && v.seq <= query.toSeq && admitted(v.aggregate)).sort((a, b) => a.seq - b.seq);
};

const chainOf = (source: LogSource): ChainReader =>
  new ChainReader(jetstreamManager(source.nc, { checkAPI: false }), jetstream(source.nc), { stream: source.stream, subjectPrefix: source.subjectPrefix, registry: meshEventRegistry() });

export interface LogSource {
  nc: NatsConnection;
  stream: string;
  subjectPrefix: string;
}

/** The stored events `rows` name, in their order, each checked against its row. */
export const eventsOf = async (source: LogSource, rows: readonly IndexRow[], aggregate: string | undefined): Promise<StoredEvent[]> => {
  const commits = [...new Set(rows.map((row) => row.seq))];
  const found = commits.length > RANGE_ABOVE_COMMITS ? await readStretch(source, rows, aggregate) : await getCommits(source, commits);
  return rows.map((row) => {
    const event = found.get(key(row.seq, row.index));
    if (event?.id !== row.id || event.type !== row.type) throw notInLog(row, event);
    return event;
  });
};

const key = (seq: number, index: number): string => `${seq}.${index}`;

/** Each commit by its sequence, from the stream's leader (STREAM.MSG.GET), a few at a time, each signature checked. */
const getCommits = async (source: LogSource, seqs: readonly number[]): Promise<Map<string, StoredEvent>> => {
  const chain = chainOf(source);
  const writerKey = await chain.rootKey();
  const jsm = await jetstreamManager(source.nc, { checkAPI: false });
  const found = new Map<string, StoredEvent>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < seqs.length) {
      const seq = seqs[next++] as number;
      const message = await jsm.streams.getMessage(source.stream, { seq });
      if (!message) continue; // a sequence the log does not hold: the check against the rows names it
      const checked = chain.check(rawOf(message), writerKey);
      if (!checked.events) throw heldError(seq, checked.aggregate, checked.problem ?? 'it does not read', checked.cause);
      for (const event of checked.events) found.set(key(seq, event.index), event);
    }
  };
  await Promise.all(Array.from({ length: Math.min(GETS_IN_FLIGHT, seqs.length) }, worker));
  return found;
};

/** The log from the first row's sequence to the last's (only the aggregate's subjects, when one was asked for), keeping the events rows name. */
const readStretch = async (source: LogSource, rows: readonly IndexRow[], aggregate: string | undefined): Promise<Map<string, StoredEvent>> => {
  const wanted = new Set(rows.map((row) => key(row.seq, row.index)));
  const first = rows[0]?.seq ?? 0;
  const last = rows.at(-1)?.seq ?? 0;
  const log = new JetStreamEventLog(source.nc, { stream: source.stream, subjectPrefix: source.subjectPrefix, registry: meshEventRegistry() });
  const found = new Map<string, StoredEvent>();
  // Voided commits in the stretch are printed by the caller in their place (voidsIn).
  for await (const event of log.read({ fromSeq: first, onPassed: () => undefined, ...(aggregate !== undefined ? { aggregate } : {}) })) {
    if (event.seq > last) break;
    const at = key(event.seq, event.index);
    if (wanted.has(at)) found.set(at, event);
  }
  return found;
};

const notInLog = (row: IndexRow, event: StoredEvent | undefined): CorruptEventError =>
  new CorruptEventError(
    `the audit projection lists ${row.type} ${row.id} at seq ${row.seq} (event ${row.index}), but the log holds ${event ? `${event.type} ${event.id}` : 'no such event'} there: ` +
      'the projection does not match this log (is MESH_READ_SCHEMA the projection of another log?); rebuild it with `npx mesh projections rebuild audit`',
    { seq: row.seq, field: 'event_id', index: row.index, projection: 'audit' },
  );
