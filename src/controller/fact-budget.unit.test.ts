import { describe, expect, it } from '@jest/globals';
import { FactBudget, factIntervalFromEnv } from './fact-budget.js';

// A clock of the test's own: the budget is judged at the times the test says.
const budgetAt = (intervalMs = 10_000) => {
  const clock = { now: 1_000_000 };
  const budget = new FactBudget({ intervalMs, now: () => clock.now });
  return { clock, budget };
};

describe('a fact about a node is stated at most once per interval per kind, the newest kept', () => {
  it('states the first value at once, lets the next wait for the interval, and names the node only when waiting values are replaced more than a few times', () => {
    const { clock, budget } = budgetAt();
    expect(budget.admit('lab1', 'fact.capabilities', null, 'A')).toBe('now');
    expect(budget.admit('lab1', 'fact.capabilities', null, 'A')).toBe('nothing');
    clock.now += 1_000;
    expect(budget.admit('lab1', 'fact.capabilities', null, 'B')).toBe('later');
    expect(budget.dueAt('lab1', 'fact.capabilities')).toBe(1_010_000);
    // Said again while it waits: nothing dropped yet, nobody named.
    expect(budget.admit('lab1', 'fact.capabilities', null, 'B')).toBe('later');
    expect(budget.takeNotes()).toEqual([]);
    // Another kind has a budget of its own.
    expect(budget.admit('lab1', 'fact.held', 'sha256:d1', 'H')).toBe('now');
    // The node changes its mind again: B is never stated. Once now and then is ordinary, and nobody is named…
    expect(budget.admit('lab1', 'fact.capabilities', null, 'C')).toBe('later');
    expect(budget.takeNotes()).toEqual([]);
    // …more than TOLERATED_DROPS times is saying more than its budget, and the node is named.
    for (const value of ['D', 'E', 'F']) expect(budget.admit('lab1', 'fact.capabilities', null, value)).toBe('later');
    expect(budget.admit('lab1', 'fact.capabilities', null, 'C')).toBe('later');
    const [note] = budget.takeNotes();
    expect(note).toMatchObject({ node: 'lab1', line: expect.stringContaining('5 fact.capabilities values never stated') });
    expect(note?.until.getTime()).toBe(clock.now + 60_000);
    // Once the interval has passed, the newest is stated, once.
    clock.now = 1_010_000;
    expect(budget.admit('lab1', 'fact.capabilities', null, 'C')).toBe('now');
    expect(budget.admit('lab1', 'fact.capabilities', null, 'C')).toBe('nothing');
    budget.stop();
  });

  it('a value taken back while it waited is dropped: what was stated stands', () => {
    const { clock, budget } = budgetAt();
    expect(budget.admit('lab1', 'fact.capabilities', null, 'A')).toBe('now');
    clock.now += 100;
    expect(budget.admit('lab1', 'fact.capabilities', null, 'B')).toBe('later');
    // Back to what was stated: nothing to state, and B never will be.
    expect(budget.admit('lab1', 'fact.capabilities', null, undefined)).toBe('nothing');
    clock.now += 20_000;
    expect(budget.admit('lab1', 'fact.capabilities', null, undefined)).toBe('nothing');
    expect(budget.takeNotes()).toEqual([]);
    budget.stop();
  });

  it("a node's first word on a declaration it was just sent is stated at once; changing it is not", () => {
    const { clock, budget } = budgetAt();
    expect(budget.admit('lab1', 'fact.applied', 'sha256:d1', 'v1')).toBe('now');
    clock.now += 500;
    expect(budget.admit('lab1', 'fact.applied', 'sha256:d2', 'v2')).toBe('now');
    clock.now += 500;
    expect(budget.admit('lab1', 'fact.applied', 'sha256:d2', 'v3')).toBe('later');
    // What waited for d2 is replaced by the answer to d3, which the mesh asked for: no mind changed.
    expect(budget.admit('lab1', 'fact.applied', 'sha256:d3', 'v4')).toBe('now');
    expect(budget.takeNotes()).toEqual([]);
    budget.stop();
  });

  it('calls the newest retry once the interval has passed, and none for a value that was settled', async () => {
    const { budget } = budgetAt(200);
    const retried: string[] = [];
    expect(budget.admit('lab1', 'fact.capabilities', null, 'A')).toBe('now');
    expect(budget.admit('lab1', 'fact.capabilities', null, 'B', () => retried.push('B'))).toBe('later');
    expect(budget.admit('lab1', 'fact.capabilities', null, 'C', () => retried.push('C'))).toBe('later');
    expect(budget.admit('lab2', 'fact.capabilities', null, 'A')).toBe('now');
    expect(budget.admit('lab2', 'fact.capabilities', null, 'B', () => retried.push('lab2 B'))).toBe('later');
    expect(budget.admit('lab2', 'fact.capabilities', null, undefined)).toBe('nothing');
    await new Promise((r) => setTimeout(r, 400));
    expect(retried).toEqual(['C']);
    budget.stop();
  });

  it('gives the budget back when the statement did not reach the log', () => {
    const { clock, budget } = budgetAt();
    expect(budget.admit('lab1', 'fact.capabilities', null, 'A')).toBe('now');
    budget.refund('lab1', 'fact.capabilities');
    clock.now += 10;
    expect(budget.admit('lab1', 'fact.capabilities', null, 'A')).toBe('now');
    budget.stop();
  });

  it('names a node whose messages were refused, counting them, and names it afresh after it was quiet', () => {
    const { clock, budget } = budgetAt();
    for (let i = 0; i < 3; i++) budget.refused('lab1', 'a heartbeat of 90000 bytes: at most 4096 are read');
    const [first] = budget.takeNotes();
    expect(first).toMatchObject({ node: 'lab1', line: '3 messages refused, the last: a heartbeat of 90000 bytes: at most 4096 are read' });
    expect(budget.takeNotes()).toEqual([]);
    clock.now += 120_000;
    budget.refused('lab1', 'a report out of bounds');
    const [again] = budget.takeNotes();
    expect(again?.line).toBe('1 message refused, the last: a report out of bounds');
    expect(again?.since.getTime()).toBe(clock.now);
  });

  it('reads its interval from MESH_FACT_INTERVAL_MS, checked where it enters', () => {
    expect(factIntervalFromEnv({})).toBe(10_000);
    expect(factIntervalFromEnv({ MESH_FACT_INTERVAL_MS: '2000' })).toBe(2_000);
    for (const raw of ['0', '50', '1e4', '-5', 'soon', '700000']) expect(() => factIntervalFromEnv({ MESH_FACT_INTERVAL_MS: raw })).toThrow(/MESH_FACT_INTERVAL_MS/);
  });
});
