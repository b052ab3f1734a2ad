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
  /** a token no other process shares, in each of this process's renewals: one stored whose answer was lost is known as its own */
  private readonly instance = randomUUID();
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
          let renewed = await this.claim(this.renewedAt.seq);
          // Refused by a renewal of its own whose answer was lost (stored all the same on a busy
          // machine): still this process's lease, renewed after that one. Counted meanwhile from
          // the last renewal answered, which is earlier, so it can only be given up early.
          const own = renewed ? undefined : await this.lastIfOwn();
          if (own !== undefined) {
            this.options.logger.info({ holder: this.options.holder, seq: own }, 'the writer lease: a renewal whose answer was lost had been stored; it is still this controller’s');
            this.renewedAt = { seq: own, sentAt: this.renewedAt.sentAt };
            renewed = await this.claim(own);
          }
          if (renewed) this.renewedAt = renewed;
          else {
            this.renewedAt = undefined;
            this.firstTry();
            callbacks.onLost('another controller holds the writer lease now');
            return;
          }
        } else {
          const taken = await this.claim(await this.releasedOrExpired());
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
      const own = await this.lastIfOwn();
      if (own !== undefined) await release(own).catch(() => undefined);
    });
  }

  /**
   * What a take must be conditioned on: the stream's last sequence when its last renewal expired
   * (nothing is stored), the release a writer left when it stopped, or this process's own take
   * whose answer was lost; a live renewal of another is what it must not follow (-1: no take is
   * tried).
   */
  private async releasedOrExpired(): Promise<number> {
    const jsm = await this.jsm;
    const info = await jsm.streams.info(this.options.stream);
    if (info.state.messages === 0) return info.state.last_seq;
    const last = await this.lastRenewal();
    if (!last) return info.state.last_seq;
    return last.released || last.own ? last.seq : -1;
  }

  /** The stream's last sequence when what it ends at is one of this process's own renewals. */
  private async lastIfOwn(): Promise<number | undefined> {
    const last = await this.lastRenewal();
    return last?.own ? last.seq : undefined;
  }

  /** The newest renewal or release stored, and whether it is this process's; null when none is. */
  private async lastRenewal(): Promise<{ seq: number; released: boolean; own: boolean } | null> {
    const last = await (await this.jsm).streams.getMessage(this.options.stream, { last_by_subj: this.options.subject }).catch(() => null);
    if (!last) return null;
    const body = last.json<{ released?: boolean; instance?: string }>();
    return { seq: last.seq, released: body.released === true, own: body.instance === this.instance };
  }

  /**
   * Publishes a renewal conditioned on the stream's last sequence: its sequence and when it was
   * sent, or undefined when someone else's is there.
   */
  private async claim(expected: number): Promise<{ seq: number; sentAt: number } | undefined> {
    if (expected < 0) return undefined;
    const sentAt = performance.now();
    try {
      const publish = this.options.publish ?? ((...args: Parameters<JetStreamClient['publish']>) => this.js.publish(...args));
      const ack = await publish(this.options.subject, JSON.stringify({ holder: this.options.holder, instance: this.instance, at: new Date().toISOString() }), {
        expect: { lastSequence: expected },
        timeout: Math.max(500, this.options.renewMs),
      });
      return { seq: ack.seq, sentAt };
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
