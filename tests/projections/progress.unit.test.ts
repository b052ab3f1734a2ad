import { describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { formatProgress, ProgressMeter, type ProgressSnapshot } from '../../src/projections/progress.js';

describe('progress of a long fold', () => {
  it('reports events done, rate and ETA to a listener and to pino', () => {
    const logged: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line) as Record<string, unknown>) });
    const seen: ProgressSnapshot[] = [];
    const meter = new ProgressMeter('audit', 2, 0, 1_000, logger, (s) => seen.push(s), 60_000);
    meter.advance(250, 400);
    meter.advance(1_000, 1_200);
    // At the head, each commit applied catches up again: told to the listener, not logged again.
    meter.advance(1_001, 1, 1_001);
    meter.advance(1_002, 1, 1_002);
    expect(seen.map((s) => [s.seq, s.events, s.done])).toEqual([
      [250, 400, false],
      [1_000, 1_600, true],
      [1_001, 1_601, true],
      [1_002, 1_602, true],
    ]);
    expect(seen[0]?.etaSeconds).toBeGreaterThanOrEqual(0);
    // The first report and the one that caught up are logged; those in between are throttled.
    expect(logged.map((l) => [l.msg, l.seq, l.events])).toEqual([
      ['projection catching up', 250, 400],
      ['projection caught up', 1_000, 1_600],
    ]);
  });

  it('reads as one line on a terminal', () => {
    const line = formatProgress({ projection: 'audit', version: 2, seq: 250_000, targetSeq: 1_000_000, events: 300_000, rate: 52_345.4, etaSeconds: 75, done: false });
    expect(line).toBe('audit v2: seq 250,000 / 1,000,000 (25%), 300,000 events, 52,345/s, ETA 1m15s');
  });
});
