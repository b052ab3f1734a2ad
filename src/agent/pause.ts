import { setTimeout as delay } from 'node:timers/promises';

/** A wait that ends early, quietly, when the signal aborts. */
export const pause = (ms: number, signal: AbortSignal): Promise<void> => delay(ms, undefined, { signal }).catch(() => undefined);

/**
 * The promise's outcome, unless the signal aborts first: then it rejects with `abandoned()` and
 * the promise's own outcome is ignored (e.g. a reply a dropped connection will never bring).
 */
export const unlessAborted = <T>(promise: Promise<T>, signal: AbortSignal, abandoned: () => Error): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const abandon = (): void => {
      promise.catch(() => undefined);
      reject(abandoned());
    };
    if (signal.aborted) return abandon();
    signal.addEventListener('abort', abandon, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abandon));
  });
