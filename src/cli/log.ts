import { jetstreamManager } from '@nats-io/jetstream';
import { loadConfig } from '../config.js';
import { connectNats } from '../adapters/nats/connect.js';
import { JetStreamEventLog } from '../adapters/eventlog/jetstream-log.js';
import { verifyLogStream } from '../adapters/eventlog/log-stream.js';
import type { StoredEvent } from '../domain/events/envelope.js';
import { meshEventRegistry } from '../domain/registry.js';
import { parseFlags, wholeNumberFlag } from './flags.js';
import { output } from './output.js';
import { ValidationError } from '../errors.js';

// `mesh log`: the audit trail, read straight from the log (no projection in between), so it
// shows exactly what was recorded, who caused it and why.

export const logCommand = async (args: string[]): Promise<number> => {
  const { values } = parseFlags(args, {
    since: { type: 'string' },
    aggregate: { type: 'string' },
    type: { type: 'string', multiple: true },
    actor: { type: 'string' },
    correlation: { type: 'string' },
    after: { type: 'string' },
    before: { type: 'string' },
    follow: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  });
  const out = output(values.json ?? false);
  const config = loadConfig();
  const fromSeq = wholeNumberFlag('since', values.since) ?? 1;
  const wanted = eventFilter({ types: values.type ?? [], actor: values.actor, correlation: values.correlation, after: timeFlag('after', values.after), before: timeFlag('before', values.before) });

  const nc = await connectNats(config.natsUrl, { name: 'mesh-log', persistent: values.follow ?? false });
  const abort = new AbortController();
  const onSignal = (): void => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const settings = { stream: config.logStream, subjectPrefix: config.logSubjectPrefix };
    await verifyLogStream(await jetstreamManager(nc), settings, config.natsUrl);
    const log = new JetStreamEventLog(nc, { ...settings, registry: meshEventRegistry() });
    const readOptions = { fromSeq, ...(values.aggregate ? { aggregate: values.aggregate } : {}) };
    if (!out.json) out.line(HEADER);
    if (values.follow) {
      for await (const item of log.follow({ ...readOptions, signal: abort.signal })) {
        if (item.kind === 'caught-up') {
          if (out.json) out.data({ caughtUp: item.seq });
          else out.line(`-- caught up at seq ${item.seq}; following --`);
        } else if (wanted(item.event)) print(out, item.event);
      }
    } else {
      for await (const event of log.read(readOptions)) if (wanted(event)) print(out, event);
    }
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await nc.close();
  }
};

const timeFlag = (name: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const time = Date.parse(value);
  if (Number.isNaN(time)) throw new ValidationError(`--${name} "${value}" is not a time: write it as ISO 8601, e.g. 2026-12-02T14:00:00Z`, { field: `--${name}` });
  return time;
};

/** Which events a reader asked for: types, an actor (a trailing * matches a prefix), a correlation, a time window. */
export const eventFilter = (want: { types: string[]; actor?: string | undefined; correlation?: string | undefined; after?: number | undefined; before?: number | undefined }) => {
  const types = new Set(want.types);
  const actor = want.actor;
  const actorMatches = (value: string): boolean => !actor || (actor.endsWith('*') ? value.startsWith(actor.slice(0, -1)) : value === actor);
  return (event: StoredEvent): boolean => {
    if (types.size > 0 && !types.has(event.type)) return false;
    if (!actorMatches(event.actor)) return false;
    if (want.correlation && event.correlationId !== want.correlation) return false;
    const time = Date.parse(event.time);
    if (want.after !== undefined && time < want.after) return false;
    if (want.before !== undefined && time > want.before) return false;
    return true;
  };
};

export const HEADER = ['SEQ'.padEnd(8), 'TIME'.padEnd(24), 'AGGREGATE@VERSION'.padEnd(32), 'TYPE'.padEnd(24), 'ACTOR'.padEnd(28), 'COMMAND'].join(' ');

export const print = (out: ReturnType<typeof output>, event: StoredEvent): void => {
  if (out.json) {
    out.data(event);
    return;
  }
  const seq = event.index === 0 ? String(event.seq) : `${event.seq}.${event.index}`;
  out.line(
    [seq.padEnd(8), event.time.padEnd(24), `${event.aggregate}@${event.version}`.padEnd(32), event.type.padEnd(24), event.actor.padEnd(28), event.commandId].join(' ') +
      `\n${' '.repeat(9)}${JSON.stringify(event.data)}`,
  );
};
