import { expect } from '@jest/globals';
import type { AppendResult } from '../../src/adapters/eventlog/event-log.js';
import type { StoredEvent } from '../../src/domain/events/envelope.js';
import { faultCount, sleep } from './faults.js';
import { meta, type TestLog } from './log.js';
import { uniqueName } from './names.js';

// Appends under a fault, and the judgement of what the log kept: shared by the fault tests that
// kill servers and those that cut them off (tests/faults).

export const APPENDS = faultCount('MESH_FAULT_APPENDS', 3_000);
export const KILL_EVERY_MS = faultCount('MESH_FAULT_KILL_EVERY_MS', 3_000);
export const WRITERS = 16;
/** however fast the appends, they go on until the server has been killed this often */
export const MIN_KILLS = 3;

export interface Run {
  acknowledged: AppendResult[];
  retries: number;
  kills: number;
  seconds: number;
}

/**
 * WRITERS aggregates appended to at once, each version retried with the same command id until the
 * log acknowledges it (a retry of one that was stored is answered with the original), while
 * `kill` runs every KILL_EVERY_MS.
 */
export const appendUnderKills = async (t: TestLog, kill: () => Promise<void>): Promise<Run> => {
  const started = Date.now();
  const acknowledged: AppendResult[] = [];
  let retries = 0;
  let kills = 0;
  let done = false;
  const killer = (async () => {
    while (!done) {
      await sleep(KILL_EVERY_MS);
      if (done) break;
      await kill();
      kills++;
    }
  })();
  const enough = () => acknowledged.length >= APPENDS && kills >= MIN_KILLS;
  const writers = Array.from({ length: WRITERS }, async () => {
    const aggregate = `counter.${uniqueName('k')}`;
    for (let version = 1; !enough(); version++) {
      const commandId = `${aggregate}-${version}`;
      for (let attempt = 1; ; attempt++) {
        try {
          acknowledged.push(await t.log.append(aggregate, [{ type: 'test.counted', data: { n: version } }], version - 1, meta(commandId)));
          break;
        } catch (error) {
          // The server is away (or was, and the append's fate is unknown): the same command again.
          retries++;
          if (attempt > 600) throw error;
          await sleep(100);
        }
      }
    }
  });
  try {
    await Promise.all(writers);
  } finally {
    done = true;
    await killer;
  }
  return { acknowledged, retries, kills, seconds: (Date.now() - started) / 1_000 };
};

/** What the log holds against what was acknowledged: lost, doubled, out of order. */
export const judge = async (t: TestLog, run: Run) => {
  const read: StoredEvent[] = [];
  for await (const event of t.another().read()) read.push(event);
  const bySeq = new Map(read.map((e) => [e.seq, e]));
  const lost = run.acknowledged.filter((ack) => {
    const stored = bySeq.get(ack.seq);
    return stored?.aggregate !== ack.aggregate || stored.version !== ack.version || stored.commandId !== ack.events[0]?.commandId;
  });
  const perCommand = new Map<string, number>();
  for (const e of read) perCommand.set(e.commandId, (perCommand.get(e.commandId) ?? 0) + 1);
  const doubled = [...perCommand].filter(([, count]) => count > 1);
  const seqs = read.map((e) => e.seq);
  const inOrder = seqs.every((seq, i) => i === 0 || seq > seqs[i - 1]!);
  const versions = new Map<string, number[]>();
  for (const e of read) versions.set(e.aggregate, [...(versions.get(e.aggregate) ?? []), e.version]);
  const gaps = [...versions].filter(([, vs]) => vs.some((v, i) => v !== i + 1)).map(([aggregate]) => aggregate);
  return { inLog: read.length, lost, doubled, inOrder, gaps };
};

export const expectKeptAll = (run: Run, found: Awaited<ReturnType<typeof judge>>): void => {
  expect(run.kills).toBeGreaterThanOrEqual(MIN_KILLS);
  expect(found.lost).toEqual([]);
  expect(found.doubled).toEqual([]);
  expect(found.inOrder).toBe(true);
  expect(found.gaps).toEqual([]);
};

