import { JetStreamApiError, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { ValidationError } from '../../errors.js';
import { assertStream } from './assert-stream.js';

// Which controller process is the mesh's one writer: a lease on the same engine as the log. The
// lease is the newest message on one subject of a stream whose messages expire after the lease's
// time. The writer renews it every second, conditioned on the subject's last sequence being its
// own previous renewal; a process that is not the writer tries to take it conditioned on the
// subject holding nothing (its last renewal expired). So at most one process holds a live lease,
// and when the writer dies another takes it once the last renewal expires.
//
// The lease is for liveness, not safety: every commit is still conditioned on the log ending where
// it was decided, so a writer that has lost its lease without knowing (a long pause) has its next
// commit refused by the log, not recorded beside another's.

export interface WriterLeaseOptions {
  /** the stream holding the lease: made here when missing */
  stream: string;
  subject: string;
  /** who this process is, for the logs of the others */
  holder: string;
  /** how long a renewal keeps the lease */
  ttlMs: number;
  /** how often the writer renews it (and how often a standby tries to take it) */
  renewMs: number;
  logger: Logger;
}

const WRONG_LAST_SEQUENCE = new Set([10071, 10164]);

/**
 * MESH_WRITER_LEASE_MS: how long the writer's lease lasts without a renewal (default 3000), which
 * bounds how long the mesh goes without a writer after the writer dies; renewed three times in it.
 */
export const writerLeaseSettingsFromEnv = (env: NodeJS.ProcessEnv = process.env): Pick<WriterLeaseOptions, 'ttlMs' | 'renewMs'> => {
  const raw = env.MESH_WRITER_LEASE_MS;
  const ttlMs = raw === undefined ? 3_000 : Number(raw);
  if (!Number.isInteger(ttlMs) || ttlMs < 1_000 || ttlMs > 60_000) {
    throw new ValidationError(`MESH_WRITER_LEASE_MS "${raw}" is not a whole number of milliseconds from 1000 to 60000`, { field: 'MESH_WRITER_LEASE_MS', value: raw });
  }
  return { ttlMs, renewMs: Math.floor(ttlMs / 3) };
};

export const writerLeaseStream = (logStream: string): string => `${logStream}_WRITER`;
export const writerLeaseSubject = (prefix: string): string => `${prefix}.controller.writer`;

export class WriterLease {
  private readonly js: JetStreamClient;
  private readonly jsm: Promise<JetStreamManager>;
  private timer: NodeJS.Timeout | undefined;
  /** the stream sequence of this process's last renewal, while it holds the lease */
  private renewedAt: { seq: number; time: number } | undefined;
  private stopped = false;
  private said: string | undefined;
  private firstTry!: () => void;
  /** resolves once this process has tried the lease once: it knows whether it is the writer */
  readonly tried: Promise<void> = new Promise((resolve) => (this.firstTry = resolve));

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: WriterLeaseOptions,
  ) {
    this.js = jetstream(nc);
    this.jsm = jetstreamManager(nc, { checkAPI: false });
  }

  /** Whether this process holds the lease now. */
  held(): boolean {
    return this.renewedAt !== undefined && Date.now() - this.renewedAt.time < this.options.ttlMs;
  }

  /** Tries to take the lease until it does (then `onTaken`), and keeps it until it cannot (then `onLost`). */
  async start(callbacks: { onTaken: () => void | Promise<void>; onLost: (why: string) => void }): Promise<void> {
    await assertStream(await this.jsm, {
      name: this.options.stream,
      description: "Which controller is the mesh's one writer: the newest renewal of its lease.",
      subjects: [this.options.subject],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      max_msgs_per_subject: 1,
      max_age: this.options.ttlMs * 1_000_000,
      duplicate_window: Math.min(this.options.ttlMs, 2_000) * 1_000_000,
    });
    const tick = async (): Promise<void> => {
      if (this.stopped) return;
      try {
        if (this.renewedAt) {
          // A renewal that came too late finds its last one expired and nobody's in its place: taking it again is the same.
          const renewed = (await this.claim(this.renewedAt.seq)) ?? (await this.claim(await this.releasedOrExpired()));
          if (renewed) this.renewedAt = { seq: renewed, time: Date.now() };
          else {
            this.renewedAt = undefined;
            this.firstTry();
            callbacks.onLost('another controller holds the writer lease now');
            return;
          }
        } else {
          const taken = await this.claim(await this.releasedOrExpired());
          if (taken) {
            this.renewedAt = { seq: taken, time: Date.now() };
            this.options.logger.info({ holder: this.options.holder }, 'this controller is the mesh writer');
            this.firstTry();
            await callbacks.onTaken();
          } else this.sayOnce('standing by: another controller is the mesh writer; commands sent here are passed to it');
        }
      } catch (error) {
        if (this.renewedAt && !this.held()) {
          this.renewedAt = undefined;
          this.firstTry();
          callbacks.onLost(`the writer lease could not be renewed for ${this.options.ttlMs} ms (${(error as Error).message})`);
          return;
        }
        this.sayOnce(`the writer lease could not be reached: ${(error as Error).message}`);
      }
      this.firstTry();
      if (!this.stopped) this.timer = setTimeout(() => void tick(), this.options.renewMs);
    };
    await tick();
  }

  /** Lets go of the lease at once (a clean stop), so another takes it without waiting it out. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const renewed = this.renewedAt;
    if (!renewed) return;
    this.renewedAt = undefined;
    await this.js
      .publish(this.options.subject, JSON.stringify({ holder: this.options.holder, released: true, at: new Date().toISOString() }), { expect: { lastSubjectSequence: renewed.seq }, timeout: 1_000 })
      .catch(() => undefined);
  }

  /**
   * What a take must be conditioned on: nothing on the subject (the last renewal expired: 0), or
   * the release a writer left when it stopped; a live renewal of another is what it must not follow
   * (-1 never matches, so the take is refused).
   */
  private async releasedOrExpired(): Promise<number> {
    const last = await (await this.jsm).streams.getMessage(this.options.stream, { last_by_subj: this.options.subject }).catch(() => null);
    if (!last) return 0;
    return last.json<{ released?: boolean }>().released === true ? last.seq : -1;
  }

  /** Publishes a renewal conditioned on the subject's last sequence; the new sequence, or undefined when someone else's is there. */
  private async claim(expected: number): Promise<number | undefined> {
    if (expected < 0) return undefined;
    try {
      const ack = await this.js.publish(this.options.subject, JSON.stringify({ holder: this.options.holder, at: new Date().toISOString() }), {
        expect: { lastSubjectSequence: expected },
        timeout: Math.max(500, this.options.renewMs),
      });
      return ack.seq;
    } catch (error) {
      if (error instanceof JetStreamApiError && WRONG_LAST_SEQUENCE.has(error.code)) return undefined;
      throw error;
    }
  }

  private sayOnce(line: string): void {
    if (this.said === line) return;
    this.said = line;
    this.options.logger.info({ holder: this.options.holder }, line);
  }
}
