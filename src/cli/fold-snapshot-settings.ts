import type { SnapshotSchedule } from '../controller/fold-snapshot-writer.js';
import { ValidationError } from '../errors.js';

// How often the controller writes a snapshot of its fold (docs/decisions.md, "Snapshots of the
// fold"), from the environment, checked where it enters.

export const DEFAULT_SNAPSHOT_SCHEDULE: SnapshotSchedule = { everyEvents: 10_000, everySeconds: 300 };

const wholeNumber = (env: NodeJS.ProcessEnv, name: string, fallback: number, max: number, unit: string): number => {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < 1 || value > max) {
    throw new ValidationError(`${name} "${raw}" is not a whole number of ${unit} from 1 to ${max}`, { field: name, value: raw });
  }
  return value;
};

/** MESH_SNAPSHOT_EVERY_EVENTS (default 10000), MESH_SNAPSHOT_EVERY_SECONDS (default 300). */
export const snapshotScheduleFromEnv = (env: NodeJS.ProcessEnv = process.env): SnapshotSchedule => ({
  everyEvents: wholeNumber(env, 'MESH_SNAPSHOT_EVERY_EVENTS', DEFAULT_SNAPSHOT_SCHEDULE.everyEvents, 100_000_000, 'events'),
  everySeconds: wholeNumber(env, 'MESH_SNAPSHOT_EVERY_SECONDS', DEFAULT_SNAPSHOT_SCHEDULE.everySeconds, 86_400, 'seconds (a day at most)'),
});
