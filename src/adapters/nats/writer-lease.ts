import { JetStreamApiError, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { WRITER_TAKEN } from '../../controller/writer-lines.js';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import { randomUUID } from 'node:crypto';
import { ValidationError } from '../../errors.js';
import { assertStream } from './assert-stream.js';

// Which controller process is the mesh's one writer: a lease on the same engine as the log. The
// lease is the newest message on one subject of a stream of its own whose messages expire after
// the lease's time. The writer renews it every third of that time, conditioned on the stream's
// last sequence being its own previous renewal; a process that is not the writer tries to take it
// conditioned on the stream's last sequence being an expired renewal or a release. So at most one
// process holds a live lease, and when the writer dies another takes it once the last renewal
// expires.
//
// The condition is the stream's last sequence (Nats-Expected-Last-Sequence), not the subject's:
// on a clustered stream nats-server 2.9 does not enforce an expected subject sequence of 0 (every
// replica decides alone: nats-server#5644) nor serialise concurrent ones (#4320), so two
// controllers could both take the lease. The stream's sequence is checked by its leader against
// what it has proposed, in order. The stream holds this one subject, so the two say the same.
//
// A holder counts its lease from the moment it sent the renewal, not from the answer: the server
// stored the renewal after that, so its expiry comes later still, and a slow answer can never
// make a writer believe it holds a lease another has already taken.
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
  /** copies the bus keeps of the lease's stream (streamReplicas): 1 when absent */
  replicas?: number;
  logger: Logger;
  /** how a renewal is published: JetStream's publish unless given (a test slows its answer) */
  publish?: JetStreamClient['publish'];
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
  /** the stream sequence of this process's last renewal, and when (monotonic ms) it was sent, while it holds the lease */
  private renewedAt: { seq: number; sentAt: number } | undefined;
  private stopped = false;
  private said: string | undefined;
  /** who this process is in its renewals: the holder's name and a token no other process shares */
  private readonly instance = randomUUID();
  /** renewals sent and not answered (a timeout), by their number, with when each was sent */
  private readonly unanswered = new Map<number, number>();
  private attempts = 0;
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
    return this.renewedAt !== undefined && performance.now() - this.renewedAt.sentAt < this.options.ttlMs;
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
      num_replicas: this.options.replicas ?? 1,
    });
    const tick = async (): Promise<void> => {
      if (this.stopped) return;
      try {
        if (this.renewedAt) {
          // Conditioned on the stream ending at its own last renewal: expired or not, nobody took it since.
          const sentAt = performance.now();
          let renewed = await this.claim(this.renewedAt.seq, sentAt);
          const own = renewed ? undefined : await this.ownUnansweredRenewal();
          if (own) {
            this.renewedAt = own;
            renewed = await this.claim(own.seq, performance.now());
          }
          if (renewed) this.renewedAt = renewed;
          else {
            this.renewedAt = undefined;
            this.firstTry();
            callbacks.onLost('another controller holds the writer lease now');
            return;
          }
        } else {
          // A take whose answer was lost may have been stored: then it is this process's to renew.
          const own = await this.ownUnansweredRenewal();
          const expected = own ? own.seq : await this.releasedOrExpired();
          const sentAt = performance.now();
          const taken = await this.claim(expected, sentAt);
          if (taken) {
            this.renewedAt = taken;
            this.options.logger.info({ holder: this.options.holder }, WRITER_TAKEN);
            this.firstTry();
            try {
              await callbacks.onTaken();
            } catch (error) {
              // Half a writer (the lease held, some of its parts never started) is worse than none: it gives the lease back and says why.
              await this.stop().catch(() => undefined);
              callbacks.onLost(`becoming the writer failed (${(error as Error).message}); the lease is given back`);
              return;
            }
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
    const release = (after: number) =>
      this.js.publish(this.options.subject, JSON.stringify({ holder: this.options.holder, released: true, at: new Date().toISOString() }), { expect: { lastSequence: after }, timeout: 1_000 });
    await release(renewed.seq).catch(async (error: unknown) => {
      // After a renewal whose answer was lost, the release follows that one, not the last answered.
      if (!(error instanceof JetStreamApiError && WRONG_LAST_SEQUENCE.has(error.code))) return;
      const own = await this.ownUnansweredRenewal().catch(() => undefined);
      if (own) await release(own.seq).catch(() => undefined);
    });
  }

  /**
   * What a take must be conditioned on: the stream's last sequence when its last renewal expired
   * (nothing is stored), or the release a writer left when it stopped; a live renewal of another is
   * what it must not follow (-1: no take is tried).
   */
  private async releasedOrExpired(): Promise<number> {
    const jsm = await this.jsm;
    const info = await jsm.streams.info(this.options.stream);
    if (info.state.messages === 0) return info.state.last_seq;
    const last = await jsm.streams.getMessage(this.options.stream, { last_by_subj: this.options.subject }).catch(() => null);
    if (!last) return info.state.last_seq;
    return last.json<{ released?: boolean }>().released === true ? last.seq : -1;
  }

  /**
   * Publishes a renewal conditioned on the stream's last sequence: its sequence and when it was
   * sent, or undefined when someone else's is there. Each renewal carries this process's token and
   * its number, so one stored whose answer never came is recognised as this process's own.
   */
  private async claim(expected: number, sentAt: number): Promise<{ seq: number; sentAt: number } | undefined> {
    if (expected < 0) return undefined;
    const attempt = ++this.attempts;
    try {
      const publish = this.options.publish ?? ((...args: Parameters<JetStreamClient['publish']>) => this.js.publish(...args));
      const ack = await publish(this.options.subject, JSON.stringify({ holder: this.options.holder, instance: this.instance, attempt, at: new Date().toISOString() }), {
        expect: { lastSequence: expected },
        timeout: Math.max(500, this.options.renewMs),
      });
      this.unanswered.clear();
      return { seq: ack.seq, sentAt };
    } catch (error) {
      if (error instanceof JetStreamApiError && WRONG_LAST_SEQUENCE.has(error.code)) return undefined;
      // No answer is not no renewal: it may be stored, and the next one must follow it, not lose to it.
      this.unanswered.set(attempt, sentAt);
      throw error;
    }
  }

  /**
   * A renewal was refused because the stream no longer ends at the last one answered: when what it
   * ends at is one of this process's own renewals that timed out (stored, its answer lost to a busy
   * machine), the lease is still this process's, counted from when that one was sent. Anything
   * else is another controller's.
   */
  private async ownUnansweredRenewal(): Promise<{ seq: number; sentAt: number } | undefined> {
    if (this.unanswered.size === 0) return undefined;
    const last = await (await this.jsm).streams.getMessage(this.options.stream, { last_by_subj: this.options.subject }).catch(() => null);
    const body = last?.json<{ instance?: string; attempt?: number }>();
    const sentAt = body?.instance === this.instance && typeof body.attempt === 'number' ? this.unanswered.get(body.attempt) : undefined;
    this.unanswered.clear();
    if (!last || sentAt === undefined) return undefined;
    this.options.logger.info({ holder: this.options.holder, seq: last.seq }, 'the writer lease: a renewal whose answer was lost had been stored; it is still this controller’s');
    return { seq: last.seq, sentAt };
  }

  private sayOnce(line: string): void {
    if (this.said === line) return;
    this.said = line;
    this.options.logger.info({ holder: this.options.holder }, line);
  }
}
