import type { NatsConnection, Subscription } from '@nats-io/nats-core';
import { z } from 'zod';
import { serveTool } from './serve-tool.js';
import type { Logger } from 'pino';
import { withoutPassword } from '../adapters/database-logins.js';
import { StoreWatch, type StoreHealth } from './store-watch.js';

// The `health` tool: what the controller knows of the servers it depends on, for a reader that
// cannot reach one itself — "PostgreSQL is unreachable since T" rather than a guess. It reads
// nothing and changes nothing, so it asks for no signature; an answer at all also says a
// controller is running.

export const healthToolSubject = (prefix: string): string => `${prefix}.seat.mesh-controller.tool.health`;

const storeHealthSchema = z.object({
  store: z.literal('PostgreSQL'),
  url: z.string(),
  reachable: z.boolean().nullable(),
  unreachableSince: z.string().nullable(),
  error: z.string().nullable(),
  checkedAt: z.string().nullable(),
});

export const healthAnswerSchema = z.object({ postgres: storeHealthSchema.nullable() });
export type HealthAnswer = z.infer<typeof healthAnswerSchema>;

export const serveHealth = (nc: NatsConnection, prefix: string, postgres: () => StoreHealth | undefined): Subscription =>
  serveTool(nc, healthToolSubject(prefix), async (): Promise<HealthAnswer> => ({ postgres: postgres() ?? null }));

/** The controller's answer, or undefined when none came in `timeoutMs` (no controller running, or none reachable). */
export const askHealth = async (nc: NatsConnection, prefix: string, timeoutMs = 2_000): Promise<HealthAnswer | undefined> => {
  try {
    const reply = await nc.request(healthToolSubject(prefix), '{}', { timeout: timeoutMs });
    const parsed = healthAnswerSchema.safeParse(reply.json());
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
};

/** Watching PostgreSQL, and answering the health tool from what is seen: one part of the controller process. */
export const watchStore = (nc: NatsConnection, prefix: string, databaseUrl: string, options: { logger: Logger; intervalMs?: number }): { state(): StoreHealth | undefined; stop(): Promise<void> } => {
  const watch = new StoreWatch(databaseUrl, { url: withoutPassword(databaseUrl), logger: options.logger, ...(options.intervalMs ? { intervalMs: options.intervalMs } : {}) });
  watch.start();
  const tool = serveHealth(nc, prefix, () => watch.state());
  let stopped: Promise<void> | undefined;
  return {
    state: () => watch.state(),
    stop: () =>
      (stopped ??= (async () => {
        tool.unsubscribe();
        await watch.stop();
      })()),
  };
};
