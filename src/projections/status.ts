import type { Pool } from 'pg';
import type { CommitReader } from './commit-reader.js';
import { buildsTable, listBuilds, type BuildStatus, type ProjectorSchemas, type Stall } from './control.js';
import type { ProjectionSchema } from './projection.js';

// What `mesh projections status` and the overview say about each projection: which version
// serves, how far behind the log head it is, any shadow build under way, and any stall. Absence is
// not health: a projection the code defines but the database has never built says so.

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
}

export const projectionsStatus = async (
  pool: Pool,
  schemas: ProjectorSchemas,
  reader: Pick<CommitReader, 'head'>,
  projections: readonly ProjectionSchema[],
): Promise<BuildState[]> => {
  const head = await reader.head();
  const exists = (await pool.query<{ found: string | null }>('SELECT to_regclass($1) AS found', [buildsTable(schemas)])).rows[0]?.found;
  const builds = exists ? await listBuilds(pool, schemas) : [];
  const code = new Map(projections.map((p) => [p.name, p.version]));
  const states: BuildState[] = builds.map((build) => {
    const lagCommits = Math.max(head.seq - build.checkpoint, 0);
    const lagSeconds =
      lagCommits === 0 ? 0 : head.time && build.checkpointTime ? Math.max((head.time.getTime() - build.checkpointTime.getTime()) / 1000, 0) : null;
    const codeVersion = code.get(build.projection);
    return {
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
    };
  });
  for (const projection of projections) {
    if (builds.some((b) => b.projection === projection.name)) continue;
    states.push({ projection: projection.name, codeVersion: projection.version, status: 'not built', checkpoint: 0, headSeq: head.seq, lagCommits: head.seq, lagSeconds: null, eventsApplied: 0, stall: null });
  }
  return states.sort((a, b) => a.projection.localeCompare(b.projection));
};

/** True when every projection the code defines serves at its version, caught up, without a stall. */
export const allHealthy = (states: readonly BuildState[]): boolean =>
  states.every((s) => s.status !== 'not built' && !s.stall && (s.status !== 'serving' || (s.lagCommits === 0 && s.version === s.codeVersion)));
