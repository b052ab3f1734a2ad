import { setTimeout as delay } from 'node:timers/promises';

/** A wait that ends early, quietly, when the signal aborts. */
export const pause = (ms: number, signal: AbortSignal): Promise<void> => delay(ms, undefined, { signal }).catch(() => undefined);
