import { createHash } from 'node:crypto';
import { DiscardPolicy, JetStreamApiError, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { z } from 'zod';
import { COMMAND_WINDOW_BOUNDS } from '../../domain/operators/command-window.js';
import { assertStream } from './assert-stream.js';
import { isTransientJetStreamError } from './transient.js';

// The command ids the controller refused, kept as spent for as long as the command they came with
// could still be fresh: a refused command replayed later (an `assign` refused while its node was
// cordoned, sent again after `uncordon`) is refused, naming the first refusal. Not in the log —
// operators' refusals must not grow what can never be purged — but in a stream of its own beside
// it, so a controller that takes over knows them: one subject per command id (a digest of it),
// the newest record only, each expiring after twice the largest window the mesh may set plus the
// clocks' skew. A command is good while it is within the window of the controller's clock either
// way, so from its refusal it stays good for at most twice the window (refused when signed a
// window ahead, good until a window after). Only the controller may write it (users.ts).

export const refusedCommandsStream = (logStream: string): string => `${logStream}_REFUSED`;

/** The subject a command id's refusal is kept under: a digest, so any id makes one token. */
export const refusedCommandSubject = (prefix: string, commandId: string): string => `${prefix}.controller.refused.${createHash('sha256').update(commandId).digest('hex')}`;

/** Clocks of two controllers (one refused it, the next judges its replay) may disagree this much. */
const CONTROLLER_SKEW_MS = 5 * 60_000;

/** How long a refusal is kept: a command refused while it was good is good for at most twice the window after. */
export const REFUSED_KEPT_MS = 2 * COMMAND_WINDOW_BOUNDS.maxSeconds * 1000 + CONTROLLER_SKEW_MS;

/** At most this much is kept; the oldest refusals go first past it (a flood of one's own refusals). */
const MAX_BYTES = 64 * 1024 * 1024;

/** What is kept of a refusal: enough to name it to whoever replays its id. */
export const refusedCommandSchema = z.strictObject({
  commandId: z.string(),
  operator: z.string(),
  type: z.string(),
  signedAt: z.string(),
  refusedAt: z.string(),
  /** the refusal's reasons, cut short */
  why: z.string().max(600),
});

export type RefusedCommand = z.infer<typeof refusedCommandSchema>;

/** The port the dispatcher keeps spent command ids through. */
export interface SpentCommandIds {
  /** The refusal kept for this command id, if it is spent. */
  spent(commandId: string): Promise<RefusedCommand | undefined>;
  /** Keeps the refusal; the id is spent from then on. */
  record(refused: RefusedCommand): Promise<void>;
}

export class RefusedCommandStore implements SpentCommandIds {
  private readonly jsm: Promise<JetStreamManager>;
  private asserted: Promise<void> | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: { logStream: string; prefix: string; replicas?: number },
  ) {
    this.jsm = jetstreamManager(nc, { checkAPI: false });
  }

  get stream(): string {
    return refusedCommandsStream(this.options.logStream);
  }

  async spent(commandId: string): Promise<RefusedCommand | undefined> {
    const jsm = await this.jsm;
    const message = await throughReloads(() =>
      jsm.streams.getMessage(this.stream, { last_by_subj: refusedCommandSubject(this.options.prefix, commandId) }).catch((error: unknown) => {
        // 10037: nothing kept for it; 10059: nothing was ever refused here (the stream is made on the first refusal)
        if (error instanceof JetStreamApiError && (error.code === 10037 || error.code === 10059)) return null;
        throw error;
      }),
    );
    if (!message) return undefined;
    const parsed = refusedCommandSchema.safeParse(message.json());
    // Only the controller writes here; what does not read is still a refusal of that id.
    return parsed.success ? parsed.data : { commandId, operator: '?', type: '?', signedAt: '?', refusedAt: new Date(message.timestamp).toISOString(), why: 'the refusal kept for it does not read' };
  }

  async record(refused: RefusedCommand): Promise<void> {
    await this.assert();
    const body = JSON.stringify(refusedCommandSchema.parse(refused));
    await throughReloads(() => jetstream(this.nc).publish(refusedCommandSubject(this.options.prefix, refused.commandId), body));
  }

  private assert(): Promise<void> {
    const asserting = (this.asserted ??= this.jsm.then((jsm) =>
      assertStream(jsm, {
        name: this.stream,
        description: 'Command ids the controller refused: spent while the command could still be fresh.',
        subjects: [`${this.options.prefix}.controller.refused.*`],
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        max_msgs_per_subject: 1,
        max_age: REFUSED_KEPT_MS * 1_000_000,
        max_bytes: MAX_BYTES,
        discard: DiscardPolicy.Old,
        num_replicas: this.options.replicas ?? 1,
      }),
    ));
    asserting.catch(() => {
      if (this.asserted === asserting) this.asserted = undefined;
    });
    return asserting;
  }
}

/**
 * nats-server answers "no responders" (or 503) to JetStream API requests for a moment while it
 * reloads its configuration, which the controller has it do on every change of the bus user list:
 * tried again a few times over about a second before it counts as the server being away.
 */
const throughReloads = async <T>(work: () => Promise<T>): Promise<T> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!isTransientJetStreamError(error) || attempt >= 6) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
};
