import type { StoredEvent } from '../domain/events/envelope.js';
import { ValidationError } from '../errors.js';
import type { LogQuery } from '../projections/audit.js';
import { filterSubjectOf } from '../adapters/eventlog/subjects.js';
import { sequenceFlag } from './flags.js';

// The filters of `mesh log`, as its flags give them and as the console's log page takes them from
// its query string: one reading of them, so the two answer the same question the same way.

export interface LogFilters {
  since?: string | undefined;
  aggregate?: string | undefined;
  type: readonly string[];
  actor?: string | undefined;
  correlation?: string | undefined;
  after?: string | undefined;
  before?: string | undefined;
}

/** What the audit index is asked, up to a sequence the caller chooses; a malformed filter is refused (exit 2) naming its flag. */
export type LogAsk = Omit<LogQuery, 'toSeq'>;

const timeFlag = (name: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const time = Date.parse(value);
  if (Number.isNaN(time)) throw new ValidationError(`--${name} "${value}" is not a time: write it as ISO 8601, e.g. 2026-12-02T14:00:00Z`, { field: `--${name}` });
  return time;
};

/** The filters read and checked: a bad sequence, time or aggregate is refused before anything is read. */
export const logAskOf = (filters: LogFilters, logSubjectPrefix: string): LogAsk => {
  const aggregate = filters.aggregate;
  if (aggregate !== undefined) filterSubjectOf(logSubjectPrefix, aggregate);
  return {
    fromSeq: sequenceFlag('--since', filters.since) ?? 1,
    aggregate,
    types: [...filters.type],
    actor: filters.actor,
    correlation: filters.correlation,
    after: timeFlag('after', filters.after),
    before: timeFlag('before', filters.before),
  };
};

/** Which events a reader asked for: types, an actor (a trailing * matches a prefix), a correlation, a time window. */
export const eventFilter = (want: Pick<LogQuery, 'types' | 'actor' | 'correlation' | 'after' | 'before'>) => {
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
