import type { Logger } from 'pino';
import type { Ask } from '../../domain/routes/grants.js';
import type { Problem } from '../../domain/refusal.js';

// ADR 0007: the holder of mesh-proxy hands back each public name the mesh asks it for. The routes
// file lists what is asked and not handed back yet (`asked`); the proxy answers each once, and not
// again while the file still lists it (the controller has recorded the name, the node's next
// declaration will drop it). An ask that leaves the file and comes back is a new ask. A refusal or
// a bus that does not answer is tried again later, never in a tight loop.

/** What the controller answered: the name recorded (or already so), or the refusal with every problem. */
export type HandBackAnswer = { ok: true; summary: string } | { ok: false; refused: readonly Problem[] };

/** Sends one answer as the proxy's own module (its answer-consumer subject); throws when the bus does not take it. */
export type SendAnswer = (ask: Ask) => Promise<HandBackAnswer>;

export interface HandBackTimings {
  /** the first wait after the bus did not take an answer, doubled each time */
  retryMs: number;
  /** the longest wait, and the wait after a refusal */
  retryMaxMs: number;
}

export const HAND_BACK_TIMINGS: HandBackTimings = { retryMs: 1_000, retryMaxMs: 30_000 };

const keyOf = (ask: Ask): string => `${ask.node}/${ask.module}/${ask.name}=${ask.publicName}`;

export class HandBack {
  /** asks answered, and still listed: not sent again */
  private readonly handedBack = new Set<string>();
  private readonly inFlight = new Set<string>();
  /** when an ask that failed may be sent again, and how long it waited last */
  private readonly retryAt = new Map<string, { at: number; waitMs: number }>();
  private latest: Ask[] = [];
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly send: SendAnswer,
    private readonly logger: Logger,
    private readonly timings: HandBackTimings = HAND_BACK_TIMINGS,
    private readonly now: () => number = Date.now,
  ) {}

  /** The routes file's `asked`, as it reads now: each ask not handed back yet is answered. */
  asked(asks: readonly Ask[]): void {
    this.latest = [...asks];
    const listed = new Set(asks.map(keyOf));
    for (const key of [...this.handedBack]) if (!listed.has(key)) this.handedBack.delete(key);
    for (const key of [...this.retryAt.keys()]) if (!listed.has(key)) this.retryAt.delete(key);
    this.pass();
  }

  /** Answers outstanding, for a caller that waits until every ask has been answered (tests, a one-shot run). */
  outstanding(): number {
    return this.latest.filter((ask) => !this.handedBack.has(keyOf(ask))).length;
  }

  /** Sends every outstanding ask now, waiting for nothing (the bus has just come back). */
  again(): void {
    this.retryAt.clear();
    this.pass();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private pass(): void {
    if (this.stopped) return;
    const now = this.now();
    for (const ask of this.latest) {
      const key = keyOf(ask);
      if (this.handedBack.has(key) || this.inFlight.has(key) || (this.retryAt.get(key)?.at ?? 0) > now) continue;
      this.inFlight.add(key);
      void this.answer(ask, key);
    }
    this.schedule();
  }

  private async answer(ask: Ask, key: string): Promise<void> {
    const who = `${ask.node}/${ask.module}'s ${ask.name === ask.route ? `route ${ask.name}` : `redirect ${ask.name} (route ${ask.route})`}`;
    try {
      const answer = await this.send(ask);
      if (answer.ok) {
        this.handedBack.add(key);
        this.retryAt.delete(key);
        this.logger.info({ publicName: ask.publicName, consumer: `${ask.node}/${ask.module}`, name: ask.name, answer: answer.summary }, `handed back ${ask.publicName} for ${who}`);
        return;
      }
      // A refusal is the controller's word on this ask; it is asked again only after the longest wait.
      this.retryAt.set(key, { at: this.now() + this.timings.retryMaxMs, waitMs: this.timings.retryMaxMs });
      this.logger.warn({ publicName: ask.publicName, consumer: `${ask.node}/${ask.module}`, refused: answer.refused }, `handing back ${ask.publicName} for ${who} was refused: ${answer.refused.map((p) => `${p.what}: ${p.why}`).join('; ')}`);
    } catch (error) {
      const waitMs = Math.min(this.timings.retryMaxMs, (this.retryAt.get(key)?.waitMs ?? this.timings.retryMs / 2) * 2);
      this.retryAt.set(key, { at: this.now() + waitMs, waitMs });
      this.logger.warn({ publicName: ask.publicName, consumer: `${ask.node}/${ask.module}`, err: (error as Error).message, retryInMs: waitMs }, `could not hand back ${ask.publicName} for ${who}: ${(error as Error).message}`);
    } finally {
      this.inFlight.delete(key);
      this.schedule();
    }
  }

  /** Wakes for the earliest retry of an ask still listed. */
  private schedule(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const due = this.latest.flatMap((ask) => {
      const key = keyOf(ask);
      const at = this.retryAt.get(key)?.at;
      return at !== undefined && !this.handedBack.has(key) && !this.inFlight.has(key) ? [at] : [];
    });
    if (due.length === 0) return;
    this.timer = setTimeout(() => this.pass(), Math.max(0, Math.min(...due) - this.now()));
    this.timer.unref();
  }
}
