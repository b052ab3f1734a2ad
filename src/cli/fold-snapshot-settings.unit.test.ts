import { describe, expect, it } from '@jest/globals';
import { DEFAULT_SNAPSHOT_SCHEDULE, snapshotScheduleFromEnv } from './fold-snapshot-settings.js';

describe('how often the controller writes a snapshot of its fold', () => {
  it('is every 10,000 events and every 5 minutes unless told otherwise', () => {
    expect(snapshotScheduleFromEnv({})).toEqual(DEFAULT_SNAPSHOT_SCHEDULE);
    expect(snapshotScheduleFromEnv({ MESH_SNAPSHOT_EVERY_EVENTS: '500', MESH_SNAPSHOT_EVERY_SECONDS: '30' })).toEqual({ everyEvents: 500, everySeconds: 30 });
  });

  it.each([
    ['MESH_SNAPSHOT_EVERY_EVENTS', '0'],
    ['MESH_SNAPSHOT_EVERY_EVENTS', '-5'],
    ['MESH_SNAPSHOT_EVERY_EVENTS', '1e4'],
    ['MESH_SNAPSHOT_EVERY_EVENTS', 'often'],
    ['MESH_SNAPSHOT_EVERY_SECONDS', '2.5'],
    ['MESH_SNAPSHOT_EVERY_SECONDS', '86401'],
  ])('refuses %s=%s, naming the variable and what it takes', (name, value) => {
    let refused: unknown;
    try {
      snapshotScheduleFromEnv({ [name]: value });
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({ code: 'validation', details: { field: name, value } });
    expect((refused as Error).message).toContain(`${name} "${value}" is not a whole number`);
  });
});
