import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Resource, ResourceKind } from '../../domain/declarations/declaration.js';
import type { Outcome } from '../outcome.js';
import type { RecordOf } from '../records.js';
import { backoff, type AgentTimings } from '../settings.js';
import type { RecordStore, StateFolder } from '../state-folder.js';

// A driver makes one kind of resource on the machine match its declaration, and gives the
// machine back on undeclare. Both are level-based: they look at the machine, not at what they
// did last, so running them twice does nothing the second time.

export interface DriverContext {
  folder: StateFolder;
  records: RecordStore;
  timings: AgentTimings;
  logger: Logger;
  /** asks for another reconcile pass (something changed outside one: a process exited, a step ended) */
  wake: (reason: string) => void;
}

export interface Applying<K extends ResourceKind> {
  resource: Extract<Resource, { kind: K }>;
  /** the record this resource continues (same identity), if any */
  record: RecordOf<K> | undefined;
  identity: string;
  digest: string;
  /** why it may not start yet (a step it runs after has not succeeded), or null */
  gate: string | null;
}

export interface Driver<K extends ResourceKind> {
  apply(applying: Applying<K>): Promise<Outcome>;
  /** Gives back what was found: stops what the agent started, deletes nothing that holds data. */
  undeclare(record: RecordOf<K>): Promise<void>;
}

export const newRecordId = (): string => randomUUID();

/** How soon a pass looks again while a module has not yet said what a resource waits for (a credential in force, a file in use), and the longest it waits. */
const MODULE_WORD_FIRST_MS = 250;
const MODULE_WORD_MAX_MS = 5_000;

/**
 * Wakes, soon, for a resource held until its module says something in a file beside it: a module
 * writes such a file whenever it likes, and no event of the agent's says it did. One timer per key;
 * the wait doubles while the module stays silent (a server that is down is not asked four times a
 * second for as long as it is down), and starts again at 250 ms once the resource is applied.
 */
export const moduleWordWaits = (context: Pick<DriverContext, 'wake'>): { lookAgain(key: string, what: string): void; settled(key: string): void } => {
  const pending = new Set<string>();
  const silentPasses = new Map<string, number>();
  return {
    lookAgain(key, what) {
      if (pending.has(key)) return;
      pending.add(key);
      const attempt = (silentPasses.get(key) ?? 0) + 1;
      silentPasses.set(key, attempt);
      setTimeout(() => {
        pending.delete(key);
        context.wake(`waiting for ${key} ${what}`);
      }, backoff(attempt, MODULE_WORD_FIRST_MS, MODULE_WORD_MAX_MS)).unref();
    },
    settled(key) {
      silentPasses.delete(key);
    },
  };
};
