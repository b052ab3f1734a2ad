import { loadConfig } from '../config.js';
import { connectAsOperator } from './bus-connection.js';
import { heldError, type PassedCommit } from '../adapters/eventlog/chain-reader.js';
import { JetStreamEventLog } from '../adapters/eventlog/jetstream-log.js';
import type { StoredEvent } from '../domain/events/envelope.js';
import { meshEventRegistry } from '../domain/registry.js';
import { eventsOf, voidsIn } from './log-read.js';
import { matchingRows, type LogQuery } from '../projections/audit.js';
import { output, TABLE_WIDTH, type Output } from './output.js';
import { withReads } from './reads.js';
import { eventFilter, logAskOf } from './log-filters.js';

// `mesh log`: the audit trail. The audit projection answers which events match, once it has
// reached the log's head (so the read sees every write before it); the log supplies what each
// event holds. With --follow it then tails the log itself from the sequence the read waited for.
// A projection that is behind or not built is refused, naming how far it got: nothing is
// answered from an index that is older than the log. A commit the log holds readers at is
// refused (exit 7), naming it; one an operator voided is printed in its place as passed by.


interface LogFlags {
  json?: true;
  since?: string;
  aggregate?: string;
  type: string[];
  actor?: string;
  correlation?: string;
  after?: string;
  before?: string;
  follow?: true;
  output?: string;
}

export const logCommand = async (values: LogFlags): Promise<number> => {
  const out = output(values.json ?? false, values.output);
  const config = loadConfig();
  // Refuses a malformed filter before anything is read.
  const want = logAskOf(values, config.logSubjectPrefix);
  const { fromSeq, aggregate } = want;
  const settings = { stream: config.logStream, subjectPrefix: config.logSubjectPrefix };

  const readTo = await withReads(['audit'], {}, async ({ db, nc, view, seq }) => {
    const query: LogQuery = { ...want, toSeq: seq };
    // The header goes out once the first page has been answered, so a refusal prints nothing.
    let headed = out.json;
    const head = (): void => {
      if (!headed) out.line(logHeader(out));
      headed = true;
    };
    // Voided commits have no rows in the index (nothing of them was applied); each is printed
    // where it stands in the log, so what was passed by is seen.
    const voided = await voidsIn({ nc, ...settings }, query);
    const printVoidsBefore = (seq: number): void => {
      while (voided.length > 0 && (voided[0] as PassedCommit).seq < seq) printPassed(out, voided.shift() as PassedCommit);
    };
    for await (const rows of matchingRows(db, view('audit'), query)) {
      const events = await eventsOf({ nc, ...settings }, rows, aggregate);
      head();
      for (const event of events) {
        printVoidsBefore(event.seq);
        print(out, event);
      }
    }
    head();
    printVoidsBefore(Number.POSITIVE_INFINITY);
    return seq;
  });
  if (!values.follow) return 0;

  const wanted = eventFilter(want);
  const nc = await connectAsOperator(config, 'mesh-log', { persistent: true });
  const abort = new AbortController();
  const onSignal = (): void => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const log = new JetStreamEventLog(nc, { ...settings, registry: meshEventRegistry() });
    const follow = { fromSeq: Math.max(fromSeq, readTo + 1), signal: abort.signal, ...(aggregate !== undefined ? { aggregate } : {}) };
    for await (const item of log.follow(follow)) {
      if (item.kind === 'caught-up') {
        if (out.json) out.data({ caughtUp: item.seq });
        else out.line(`-- caught up at seq ${item.seq}; following --`);
      } else if (item.kind === 'passed') printPassed(out, item.commit);
      else if (item.kind === 'held') throw heldError(item.seq, item.aggregate, item.problem);
      else if (wanted(item.event)) print(out, item.event);
    }
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await nc.close();
  }
};

// A row of the log in 100 columns: sequence, time to the second, aggregate and version, type,
// actor (each clipped with … when longer), then the event's data wrapped beneath it. `-o wide`
// gives every field in full on one line, with the command id, and the data unwrapped.
const NARROW = [
  { name: 'SEQ', width: 7 },
  { name: 'TIME (UTC)', width: 20 },
  { name: 'AGGREGATE@VERSION', width: 26 },
  { name: 'TYPE', width: 22 },
  { name: 'ACTOR', width: 19 },
] as const;
const WIDE = [8, 24, 32, 24, 28] as const;
const DATA_INDENT = 9;

const clipTo = (text: string, width: number): string => (text.length <= width ? text : `${text.slice(0, width - 1)}…`);

/** One row, narrow (clipped to 100 columns) or wide (every cell in full, with the command). */
const row = (out: Output, cells: readonly string[], command: string): string =>
  out.wide ? [...WIDE.map((w, i) => (cells[i] ?? '').padEnd(w)), command].join(' ').trimEnd() : NARROW.map((c, i) => clipTo(cells[i] ?? '', c.width).padEnd(c.width)).join(' ').trimEnd();

/** The data beneath a row: one line when wide, else wrapped in 100 columns. */
const dataLines = (out: Output, data: unknown): string[] => {
  const text = JSON.stringify(data);
  if (out.wide) return [`${' '.repeat(DATA_INDENT)}${text}`];
  const width = TABLE_WIDTH - DATA_INDENT;
  return Array.from({ length: Math.ceil(text.length / width) || 1 }, (_, i) => `${' '.repeat(DATA_INDENT)}${text.slice(i * width, (i + 1) * width)}`);
};

/** The log's header row, as `out` prints its rows. */
export const logHeader = (out: Output): string => row(out, out.wide ? ['SEQ', 'TIME', 'AGGREGATE@VERSION', 'TYPE', 'ACTOR'] : NARROW.map((c) => c.name), 'COMMAND');

/** An event's time to the second, as the narrow row prints it: 2026-12-03T21:18:31Z. */
const toSecond = (time: string): string => time.replace(/\.\d+Z$/, 'Z');

/** A commit an operator voided, in its place in the log: readers passed it by. */
export const printPassed = (out: Output, passed: PassedCommit): void => {
  if (out.json) {
    out.data({ passed });
    return;
  }
  out.line(row(out, [String(passed.seq), out.wide ? 'VOIDED' : 'VOIDED, passed by', passed.aggregate, `voided at seq ${passed.voidSeq}`, passed.actor], 'passed by'));
  for (const line of dataLines(out, { reason: passed.reason, problem: passed.problem })) out.line(line);
};

export const print = (out: Output, event: StoredEvent): void => {
  if (out.json) {
    out.data(event);
    return;
  }
  const seq = event.index === 0 ? String(event.seq) : `${event.seq}.${event.index}`;
  out.line(row(out, [seq, out.wide ? event.time : toSecond(event.time), `${event.aggregate}@${event.version}`, event.type, event.actor], event.commandId));
  for (const line of dataLines(out, event.data)) out.line(line);
};
