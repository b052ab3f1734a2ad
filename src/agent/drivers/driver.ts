import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Resource, ResourceKind } from '../../domain/declarations/declaration.js';
import type { Outcome } from '../outcome.js';
import type { RecordOf } from '../records.js';
import type { AgentTimings } from '../settings.js';
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
