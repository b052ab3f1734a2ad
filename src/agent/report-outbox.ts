import type { Logger } from 'pino';
import type { Report } from '../domain/reports/report.js';
import { pause, unlessAborted } from './pause.js';
import { backoff, type AgentTimings } from './settings.js';

// Reports leave through here, and never hold up applying: the newest report waits until it is
// published (CONTROL missing, NATS down), older ones it replaces are dropped — only the newest
// state of the node matters to the controller. A publish under way when the connection drops may
// have lost its acknowledgement with it: a reconnect stops waiting for it and publishes the newest
// report at once (the same report again is dropped by the stream as a duplicate of its msgID),
// rather than holding every newer report behind the publish timeout.

export class ReportOutbox {
  private pending: Report | undefined;
  private wake: (() => void) | undefined;
  private readonly stopping = new AbortController();
  private nudge = new AbortController();
  private readonly loop: Promise<void>;

  constructor(
    private readonly publish: (report: Report) => Promise<void>,
    private readonly timings: AgentTimings,
    private readonly logger: Logger,
  ) {
    this.loop = this.run();
  }

  offer(report: Report): void {
    this.pending = report;
    this.wake?.();
  }

  /** Ends a wait before a retry: the way out is open again (NATS reconnected). */
  retryNow(): void {
    this.nudge.abort();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping.signal.aborted) {
      const report = this.pending;
      if (!report) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      if (this.nudge.signal.aborted) this.nudge = new AbortController();
      try {
        await unlessAborted(this.publish(report), this.nudge.signal, () => new Reconnected());
        failures = 0;
        if (this.pending === report) this.pending = undefined;
      } catch (error) {
        if (error instanceof Reconnected) continue;
        failures++;
        const retryInMs = backoff(failures, this.timings.reportRetryMs, this.timings.reportRetryMaxMs);
        this.logger.warn({ sequence: report.sequence, retryInMs, err: (error as Error).message }, 'report not published; kept to retry');
        await pause(retryInMs, AbortSignal.any([this.stopping.signal, this.nudge.signal]));
        this.nudge = new AbortController();
      }
    }
  }
}

class Reconnected extends Error {}
