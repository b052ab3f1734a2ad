import type { Pool } from 'pg';
import type { CommitReader } from './commit-reader.js';
import { controlTablesMade, listBuilds, type BuildStatus, type ProjectorSchemas, type Stall } from './control.js';
import type { ProjectionSchema } from './projection.js';
import { ValidationError } from '../errors.js';

// What `mesh projections status` and the overview say about each projection: which version
// serves, how far behind the log head it is, any shadow build under way, and any stall. Absence is
// not health: a projection the code defines but the database has never built says so, and one
// that has applied nothing for a while although the log holds commits after its checkpoint is
// "not moving" — named as a problem, not "serving" (a reader that holds what it was delivered, or
// a consumer that delivers nothing, looks exactly like that from outside).

/** How long a build may apply nothing while the log holds more before it is "not moving": MESH_PROJECTION_NOT_MOVING_MS, else 30 s. */
export const notMovingAfterMs = (env: NodeJS.ProcessEnv = process.env): number => {
  const raw = env.MESH_PROJECTION_NOT_MOVING_MS;
  if (raw === undefined) return 30_000;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 86_400_000) {
    throw new ValidationError(`MESH_PROJECTION_NOT_MOVING_MS "${raw}" is not a whole number of milliseconds from 1 to 86400000 (a day)`, { field: 'MESH_PROJECTION_NOT_MOVING_MS', value: raw });
  }
  return value;
};

export interface BuildState {
  projection: string;
  /** The version this code defines (absent for a projection this code no longer knows). */
  codeVersion?: number;
  status: BuildStatus | 'not built';
  version?: number;
  generation?: number;
  schema?: string;
  checkpoint: number;
  headSeq: number;
  /** Log entries (commits) not applied yet. */
  lagCommits: number;
  /** How much older the last applied commit is than the head; 0 when caught up, null when unknown. */
  lagSeconds: number | null;
  eventsApplied: number;
  stall: Stall | null;
  /**
   * Set when the log has held commits after the checkpoint for longer than the threshold and the
   * build has applied nothing for as long, without a stall to say why: since when.
   */
  notMoving: { since: Date; seconds: number } | null;
  /** What is wrong with it, in a sentence, or null: not built, stalled, not moving, not at the code's version. */
  problem: string | null;
}

const iso = (date: Date): string => date.toISOString();

/** The problem a state names, if any; catching up alone is not one. */
export const problemOf = (s: Omit<BuildState, 'problem'>): string | null => {
  if (s.status === 'not built') return `${s.projection} is not built: nothing folds the log into it (is the controller running?)`;
  if (s.stall) {
    const next = s.stall.nextAttemptAt ? `; next try at ${iso(s.stall.nextAttemptAt)}` : '';
    return `${s.projection} is stalled at seq ${s.stall.seq} (${s.stall.type}${s.stall.sqlstate ? `, SQLSTATE ${s.stall.sqlstate}` : ''}) since ${iso(s.stall.since)}, ${s.stall.attempts} ${s.stall.attempts === 1 ? 'try' : 'tries'}${next}: ${s.stall.error}`;
  }
  if (s.notMoving) {
    return `${s.projection} is not moving: it has applied nothing since ${iso(s.notMoving.since)} (${Math.round(s.notMoving.seconds)} s) while the log holds ${s.lagCommits} ${s.lagCommits === 1 ? 'commit' : 'commits'} after its checkpoint (seq ${s.checkpoint} of ${s.headSeq})`;
  }
  if (s.status === 'serving' && s.codeVersion !== undefined && s.version !== s.codeVersion) return `${s.projection} serves v${s.version}, the code defines v${s.codeVersion}`;
  return null;
};

export const projectionsStatus = async (
  pool: Pool,
  schemas: ProjectorSchemas,
  reader: Pick<CommitReader, 'head' | 'storedAt'>,
  projections: readonly ProjectionSchema[],
  options: { now?: Date; notMovingAfterMs?: number } = {},
): Promise<BuildState[]> => {
  const head = await reader.head();
  const builds = (await controlTablesMade(pool, schemas)) ? await listBuilds(pool, schemas) : [];
  const now = options.now ?? new Date();
  const threshold = options.notMovingAfterMs ?? notMovingAfterMs();
  const code = new Map(projections.map((p) => [p.name, p.version]));
  const states: BuildState[] = [];
  for (const build of builds) {
    const lagCommits = Math.max(head.seq - build.checkpoint, 0);
    const lagSeconds =
      lagCommits === 0 ? 0 : head.time && build.checkpointTime ? Math.max((head.time.getTime() - build.checkpointTime.getTime()) / 1000, 0) : null;
    const codeVersion = code.get(build.projection);
    // Not moving: the first commit it has not applied has waited past the threshold, and the
    // build has not changed for as long. A build catching up moves; one held by a stall says so.
    let notMoving: BuildState['notMoving'] = null;
    if (lagCommits > 0 && !build.stall && build.status !== 'retired' && now.getTime() - build.updatedAt.getTime() > threshold) {
      const waiting = await reader.storedAt(build.checkpoint + 1);
      if (waiting && now.getTime() - waiting.getTime() > threshold) {
        const since = new Date(Math.max(waiting.getTime(), build.updatedAt.getTime()));
        notMoving = { since, seconds: (now.getTime() - since.getTime()) / 1000 };
      }
    }
    const state = {
      projection: build.projection,
      ...(codeVersion !== undefined ? { codeVersion } : {}),
      status: build.status,
      version: build.version,
      generation: build.generation,
      schema: build.schemaName,
      checkpoint: build.checkpoint,
      headSeq: head.seq,
      lagCommits,
      lagSeconds,
      eventsApplied: build.eventsApplied,
      stall: build.stall,
      notMoving,
    };
    states.push({ ...state, problem: problemOf(state) });
  }
  for (const projection of projections) {
    if (builds.some((b) => b.projection === projection.name)) continue;
    const state = { projection: projection.name, codeVersion: projection.version, status: 'not built' as const, checkpoint: 0, headSeq: head.seq, lagCommits: head.seq, lagSeconds: null, eventsApplied: 0, stall: null, notMoving: null };
    states.push({ ...state, problem: problemOf(state) });
  }
  return states.sort((a, b) => a.projection.localeCompare(b.projection));
};

/** True when every projection the code defines serves at its version, caught up, without a stall. */
export const allHealthy = (states: readonly BuildState[]): boolean =>
  states.every((s) => s.status !== 'not built' && !s.stall && !s.notMoving && (s.status !== 'serving' || (s.lagCommits === 0 && s.version === s.codeVersion)));
