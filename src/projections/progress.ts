import type { Logger } from 'pino';

// Progress of a long fold (a rebuild, a catch-up): events done, rate and ETA. The same figures go
// to pino as structured logs (throttled) and, when a person is watching, to one line on a terminal.

export interface ProgressSnapshot {
  projection: string;
  version: number;
  /** The LOG sequence reached and the one being caught up to. */
  seq: number;
  targetSeq: number;
  events: number;
  /** Events per second since the fold started. */
  rate: number;
  /** Seconds left at that rate; null until it can be estimated. */
  etaSeconds: number | null;
  done: boolean;
}

export type ProgressListener = (snapshot: ProgressSnapshot) => void;

export class ProgressMeter {
  private readonly started = Date.now();
  private readonly startSeq: number;
  private events = 0;
  private lastLog = 0;
  /** said "caught up" and nothing since: at the head every commit catches up again, and is not news */
  private saidCaughtUp = false;

  constructor(
    private readonly projection: string,
    private readonly version: number,
    fromSeq: number,
    private targetSeq: number,
    private readonly logger: Logger,
    private readonly listener?: ProgressListener,
    private readonly logEveryMs = 5_000,
  ) {
    this.startSeq = fromSeq;
  }

  advance(seq: number, events: number, headSeq?: number): void {
    this.events += events;
    if (headSeq !== undefined && headSeq > this.targetSeq) this.targetSeq = headSeq;
    this.report(this.snapshot(seq, seq >= this.targetSeq));
  }

  snapshot(seq: number, done: boolean): ProgressSnapshot {
    const seconds = Math.max((Date.now() - this.started) / 1000, 0.001);
    const seqRate = (seq - this.startSeq) / seconds;
    const remaining = Math.max(this.targetSeq - seq, 0);
    return {
      projection: this.projection,
      version: this.version,
      seq,
      targetSeq: this.targetSeq,
      events: this.events,
      rate: this.events / seconds,
      etaSeconds: seqRate > 0 ? remaining / seqRate : null,
      done,
    };
  }

  private report(snapshot: ProgressSnapshot): void {
    this.listener?.(snapshot);
    const now = Date.now();
    if (snapshot.done ? !this.saidCaughtUp : now - this.lastLog >= this.logEveryMs) {
      this.lastLog = now;
      this.saidCaughtUp = snapshot.done;
      this.logger.info(
        { seq: snapshot.seq, targetSeq: snapshot.targetSeq, events: snapshot.events, rate: Math.round(snapshot.rate), etaSeconds: snapshot.etaSeconds === null ? null : Math.round(snapshot.etaSeconds), done: snapshot.done },
        snapshot.done ? 'projection caught up' : 'projection catching up',
      );
    }
  }
}

const duration = (seconds: number | null): string => {
  if (seconds === null) return '?';
  if (seconds < 60) return `${Math.ceil(seconds)}s`;
  const m = Math.floor(seconds / 60);
  return m < 60 ? `${m}m${String(Math.round(seconds % 60)).padStart(2, '0')}s` : `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
};

export const formatProgress = (s: ProgressSnapshot): string => {
  const pct = s.targetSeq > 0 ? Math.min(100, Math.floor((s.seq / s.targetSeq) * 100)) : 100;
  return `${s.projection} v${s.version}: seq ${s.seq.toLocaleString('en')} / ${s.targetSeq.toLocaleString('en')} (${pct}%), ${s.events.toLocaleString('en')} events, ${Math.round(s.rate).toLocaleString('en')}/s, ETA ${s.done ? '0s' : duration(s.etaSeconds)}`;
};

/** One self-rewriting line on a terminal, at most every `everyMs`; a plain line per update elsewhere is too noisy, so it stays quiet. */
export const terminalProgress = (stream: NodeJS.WriteStream = process.stderr, everyMs = 200): ProgressListener => {
  let last = 0;
  return (snapshot) => {
    if (!stream.isTTY) return;
    const now = Date.now();
    if (!snapshot.done && now - last < everyMs) return;
    last = now;
    stream.write(`\r\x1b[2K${formatProgress(snapshot)}${snapshot.done ? '\n' : ''}`);
  };
};
