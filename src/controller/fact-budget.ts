import { ValidationError } from '../errors.js';

// How often what a node says may become a commit of the log, which is never purged. A fact about a
// node is stated at most once per interval per kind (fact.capabilities, fact.held, …) however often
// the node changes its mind: what it says meanwhile waits, only the newest is kept, and once the
// interval has passed that newest value is stated, once. A value replaced while it waited was never
// stated: the node said more than its budget, and it is named (the controller's node status table,
// so naming it costs no commit). Its first word on a declaration it was just sent is not its mind
// changing but the answer the mesh asked for, paid for by the commit that changed the mesh: it is
// stated at once. Kept in this process's memory only: a controller that starts again starts afresh.
// docs/decisions.md, "What a node says is bounded, and a node changing its mind is stated once per interval".

/** At most one fact of a kind about a node per this long, unless MESH_FACT_INTERVAL_MS says otherwise. */
export const DEFAULT_FACT_INTERVAL_MS = 10_000;

/** MESH_FACT_INTERVAL_MS (from 100 ms to 10 min), else 10 s. */
export const factIntervalFromEnv = (env: NodeJS.ProcessEnv = process.env): number => {
  const raw = env.MESH_FACT_INTERVAL_MS;
  if (raw === undefined || raw === '') return DEFAULT_FACT_INTERVAL_MS;
  const ms = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(ms) || ms < 100 || ms > 600_000) {
    throw new ValidationError(`MESH_FACT_INTERVAL_MS "${raw}" is not a whole number of milliseconds from 100 to 600000`, { field: 'MESH_FACT_INTERVAL_MS', value: raw });
  }
  return ms;
};

export interface FactBudgetOptions {
  intervalMs: number;
  /** how long a node stays named after it last went over its budget: 6 intervals, at least a minute */
  namedForMs?: number;
  now?: () => number;
}

/** What to do with a value a node said: state it now, let it wait for the interval, or nothing (already stated). */
export type Admission = 'now' | 'later' | 'nothing';

/** A node over its budget, as the node status table names it. */
export interface BudgetNote {
  node: string;
  /** what it said beyond its budget, plainly */
  line: string;
  since: Date;
  /** the last time it did */
  at: Date;
  /** named until then unless it goes over again */
  until: Date;
}

interface Spent {
  at: number;
  /** the declaration the value answered, null for what is not about one (capabilities) */
  about: string | null;
  value: string;
}

interface Waiting {
  value: string;
  about: string | null;
  retry: (() => void) | undefined;
  timer: NodeJS.Timeout | undefined;
}

interface Excess {
  since: number;
  at: number;
  /** kind → values never stated */
  dropped: Map<string, number>;
  refused: number;
  lastRefusal: string | null;
}

const keyOf = (node: string, kind: string): string => `${node}\u0000${kind}`;

export class FactBudget {
  readonly intervalMs: number;
  private readonly namedForMs: number;
  private readonly now: () => number;
  private readonly spent = new Map<string, Spent>();
  private readonly waiting = new Map<string, Waiting>();
  private readonly excess = new Map<string, Excess>();
  private readonly changed = new Set<string>();

  constructor(options: FactBudgetOptions) {
    this.intervalMs = options.intervalMs;
    this.namedForMs = options.namedForMs ?? Math.max(60_000, 6 * options.intervalMs);
    this.now = options.now ?? Date.now;
  }

  /**
   * What to do with `value` (the facts of `kind` a node's newest word would state; undefined: none,
   * what was stated stands), said about the declaration `about`. `later`: it waits, replacing
   * whatever waited, and `retry` is called once the interval has passed.
   */
  admit(node: string, kind: string, about: string | null, value: string | undefined, retry?: () => void): Admission {
    const key = keyOf(node, kind);
    const waiting = this.waiting.get(key);
    const spent = this.spent.get(key);
    // What waited for an older declaration is not a mind changed: the mesh moved on under it.
    const replaces = (next: string | undefined) => waiting !== undefined && waiting.about === about && waiting.value !== next;
    if (value === undefined || (spent?.about === about && spent.value === value)) {
      if (replaces(undefined)) this.drop(node, kind);
      this.settle(key);
      return 'nothing';
    }
    const first = spent === undefined || spent.about !== about;
    if (first || this.now() >= spent.at + this.intervalMs) {
      if (replaces(value)) this.drop(node, kind);
      this.settle(key);
      this.spent.set(key, { at: this.now(), about, value });
      return 'now';
    }
    if (replaces(value)) this.drop(node, kind);
    const timer = waiting?.timer ?? setTimeout(() => this.due(key), Math.max(0, spent.at + this.intervalMs - this.now()) + 5);
    timer.unref();
    this.waiting.set(key, { value, about, retry, timer });
    return 'later';
  }

  /** When a value of `kind` about `node` may next be stated. */
  dueAt(node: string, kind: string): number {
    const spent = this.spent.get(keyOf(node, kind));
    return spent ? spent.at + this.intervalMs : this.now();
  }

  /** A statement admitted `now` did not reach the log: the budget it took is given back, so the next word is tried at once. */
  refund(node: string, kind: string): void {
    this.spent.delete(keyOf(node, kind));
  }

  /** A message the node sent that was refused outright (too large, out of bounds): it is named. */
  refused(node: string, why: string): void {
    const excess = this.excessOf(node);
    excess.refused++;
    excess.lastRefusal = why;
  }

  /** The nodes whose note changed since the last call, each with its note: for the node status table. */
  takeNotes(): BudgetNote[] {
    const notes = [...this.changed].flatMap((node) => {
      const excess = this.excess.get(node);
      return excess && overBudget(excess) ? [this.noteOf(node, excess)] : [];
    });
    this.changed.clear();
    return notes;
  }

  /** Notes not recorded (PostgreSQL away): taken again by the next takeNotes. */
  untaken(notes: readonly BudgetNote[]): void {
    for (const note of notes) this.changed.add(note.node);
  }

  stop(): void {
    for (const waiting of this.waiting.values()) clearTimeout(waiting.timer);
    this.waiting.clear();
  }

  private due(key: string): void {
    const waiting = this.waiting.get(key);
    if (!waiting) return;
    waiting.timer = undefined;
    // The retry admits the newest value again, now that its interval has passed.
    this.waiting.delete(key);
    waiting.retry?.();
  }

  private settle(key: string): void {
    const waiting = this.waiting.get(key);
    if (!waiting) return;
    clearTimeout(waiting.timer);
    this.waiting.delete(key);
  }

  private drop(node: string, kind: string): void {
    const excess = this.excessOf(node);
    excess.dropped.set(kind, (excess.dropped.get(kind) ?? 0) + 1);
  }

  private excessOf(node: string): Excess {
    const now = this.now();
    let excess = this.excess.get(node);
    // Named since the first time in a run of going over; a node quiet for the whole time it is named starts afresh.
    if (!excess || now > excess.at + this.namedForMs) {
      excess = { since: now, at: now, dropped: new Map(), refused: 0, lastRefusal: null };
      this.excess.set(node, excess);
    }
    excess.at = now;
    this.changed.add(node);
    return excess;
  }

  private noteOf(node: string, excess: Excess): BudgetNote {
    const seconds = `${(this.intervalMs / 1000).toLocaleString('en')} s`;
    const parts: string[] = [];
    const dropped = [...excess.dropped].sort(([a], [b]) => (a < b ? -1 : 1));
    if (dropped.length > 0) {
      parts.push(
        `changed its mind faster than one fact of a kind per ${seconds}: ${dropped.map(([kind, n]) => `${n.toLocaleString('en')} ${kind} ${n === 1 ? 'value' : 'values'}`).join(', ')} never stated (the newest is, once per ${seconds})`,
      );
    }
    if (excess.refused > 0) parts.push(`${excess.refused.toLocaleString('en')} ${excess.refused === 1 ? 'message' : 'messages'} refused, the last: ${excess.lastRefusal ?? ''}`);
    return { node, line: parts.join('; '), since: new Date(excess.since), at: new Date(excess.at), until: new Date(excess.at + this.namedForMs) };
  }
}

/**
 * A node changing its mind a few times is ordinary (a hold that ends once its secret arrives, a
 * process that restarts while it starts): a value dropped now and then is not stated, and the node is
 * not named for it. More than this many dropped while it is named, or any message refused, is a node
 * saying more than its budget.
 */
export const TOLERATED_DROPS = 3;

const overBudget = (excess: Excess): boolean => excess.refused > 0 || [...excess.dropped.values()].reduce((sum, n) => sum + n, 0) > TOLERATED_DROPS;
