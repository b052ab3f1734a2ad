import { ValidationError } from '../errors.js';

// How far behind the log a projection may be while the controller still answers ready on /readyz
// (src/controller/readiness.ts), from the environment, checked where it enters.

export const DEFAULT_READY_MAX_LAG_COMMITS = 10;

/** MESH_READY_MAX_LAG_COMMITS: commits a serving projection may trail the log's head by (default 10; 0: none). */
export const readyMaxLagFromEnv = (env: NodeJS.ProcessEnv = process.env): number => {
  const raw = env.MESH_READY_MAX_LAG_COMMITS;
  if (raw === undefined || raw === '') return DEFAULT_READY_MAX_LAG_COMMITS;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value > 1_000_000) {
    throw new ValidationError(`MESH_READY_MAX_LAG_COMMITS "${raw}" is not a whole number of commits from 0 to 1000000`, { field: 'MESH_READY_MAX_LAG_COMMITS', value: raw });
  }
  return value;
};
