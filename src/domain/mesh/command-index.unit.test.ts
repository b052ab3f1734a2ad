import { describe, expect, it } from '@jest/globals';
import { commandCarriedOut, emptyCommandIndex, RECENT_COMMANDS, recordCommand } from './command-index.js';

// The fold knows which commands the log holds in memory bounded by the recent ones: a recent
// command exactly, an older one as "perhaps" (never as "no"), one the log never held almost
// always as "no".

describe('the command index', () => {
  const filled = (count: number) => {
    const index = emptyCommandIndex();
    for (let seq = 1; seq <= count; seq++) recordCommand(index, `command-${seq}`, { seq, aggregate: `node.n${seq}` });
    return index;
  };

  it('keeps the recent commands exactly, with where they landed', () => {
    const index = filled(RECENT_COMMANDS + 5_000);
    expect(index.recent.size).toBe(RECENT_COMMANDS);
    const newest = RECENT_COMMANDS + 5_000;
    expect(commandCarriedOut(index, `command-${newest}`)).toEqual({ seq: newest, aggregate: `node.n${newest}` });
    expect(index.olderThrough).toBe(5_000);
  });

  it('never says "no" of an older command the log holds', () => {
    const index = filled(RECENT_COMMANDS + 70_000);
    let saidNo = 0;
    for (let seq = 1; seq <= 70_000; seq++) if (commandCarriedOut(index, `command-${seq}`) !== 'perhaps') saidNo++;
    expect(saidNo).toBe(0);
    // past the first layer of the filter, a second one was begun
    expect(index.older.length).toBe(2);
  });

  it('says "no" of a command the log never held, but for about one in ten thousand', () => {
    const index = filled(RECENT_COMMANDS + 60_000);
    let perhaps = 0;
    for (let i = 0; i < 20_000; i++) if (commandCarriedOut(index, `never-${i}`) !== undefined) perhaps++;
    expect(perhaps).toBeLessThan(20);
  });

  it('records a command of several events once', () => {
    const index = emptyCommandIndex();
    recordCommand(index, 'c', { seq: 3, aggregate: 'node.a' });
    recordCommand(index, 'c', { seq: 3, aggregate: 'node.a' });
    expect(index.recent.size).toBe(1);
  });

  it('holds memory bounded by the recent commands and the filter: four hundred thousand commands in a few megabytes', () => {
    const index = filled(400_000);
    const filterBytes = index.older.reduce((sum, layer) => sum + layer.bits.byteLength, 0);
    expect(index.recent.size).toBe(RECENT_COMMANDS);
    expect(filterBytes).toBeLessThan(8 * 1024 * 1024);
  });
});
