import type { ClientBase, QueryResult } from 'pg';
import type { AnyEvent, StoredEvent } from '../domain/events/envelope.js';
import type { LogCommit } from './commit-reader.js';
import { buildsTable, progressChannel, toBuild, type Build, type BuildRow, type ProjectorSchemas } from './control.js';
import { handlerOf, type ProjectionDefinition, type ProjectionTx } from './projection.js';
import { ident, sqlstateOf } from './sql.js';

// One transaction: the rows of some commits and the checkpoint that says they are in, together.
// The build's row is locked first and the checkpoint read under that lock, so a commit at or below
// it is skipped — applying an event twice is a no-op, whoever tries.
//
// The transaction does not wait for its WAL to reach the disk (synchronous_commit off): what a
// crash of PostgreSQL could lose is the last few transactions whole — rows and checkpoint
// together — which the projection simply folds again from the log. Nothing is lost or applied
// twice, and a rebuild no longer waits on a disk flush per batch.

/** Why a commit could not be applied: the event, and PostgreSQL's SQLSTATE when it refused. */
export class ApplyFailure extends Error {
  constructor(
    readonly seq: number,
    readonly type: string,
    readonly sqlstate: string | undefined,
    cause: unknown,
  ) {
    super(`${type} at seq ${seq}: ${(cause as Error)?.message ?? String(cause)}${sqlstate ? ` (SQLSTATE ${sqlstate})` : ''}`, { cause });
    this.name = 'ApplyFailure';
  }
}

/** The build is no longer building or serving: another build took over, and this one stops. */
export class BuildRetired extends Error {
  constructor(readonly buildId: number) {
    super(`build ${buildId} has been retired`);
    this.name = 'BuildRetired';
  }
}

export interface Applied {
  /** Commits newly applied (those at or below the checkpoint are skipped). */
  commits: number;
  events: number;
  checkpoint: number;
}

export const projectionTx = (client: ClientBase, schemaName: string): ProjectionTx => {
  const schema = ident(schemaName);
  return { client, schema, table: (name) => `${schema}.${ident(name)}` };
};

/**
 * Applies `commits` (in log order) to `build` in one transaction on `client`, moving its
 * checkpoint to the last one. With more than one commit the projection's `applyMany` may write
 * them at once; a single commit goes event by event, so a failure names its event.
 *
 * Round trips are what a projector at the log's head pays for: every projection sees every
 * commit, and most handle few of them. A batch the projection has nothing to write for moves its
 * checkpoint in one round trip; one it writes for takes one to begin and lock, its rows, and one
 * to move the checkpoint and commit.
 */
export const applyCommits = async <E extends AnyEvent>(
  client: ClientBase,
  schemas: ProjectorSchemas,
  build: Pick<Build, 'id' | 'schemaName'>,
  projection: ProjectionDefinition<E>,
  commits: readonly LogCommit<E>[],
): Promise<Applied> => {
  const last = commits.at(-1);
  if (!last) return { commits: 0, events: 0, checkpoint: 0 };
  if (!commits.some((commit) => commit.events.some((event) => handlerOf(projection, event.type)))) return moveCheckpoint(client, schemas, build, projection, commits);
  try {
    const lockRead = (await client.query(`BEGIN; SET LOCAL synchronous_commit TO off; SELECT * FROM ${buildsTable(schemas)} WHERE id = ${integer(build.id)} FOR UPDATE`)) as unknown as QueryResult<BuildRow>[];
    const row = lockRead[2]?.rows[0];
    const current = row ? toBuild(row) : undefined;
    if (!current || current.status === 'retired') throw new BuildRetired(build.id);
    const fresh = commits.filter((commit) => commit.seq > current.checkpoint);
    const lastFresh = fresh.at(-1);
    if (!lastFresh) {
      await client.query('ROLLBACK');
      return { commits: 0, events: 0, checkpoint: current.checkpoint };
    }
    const tx = projectionTx(client, build.schemaName);
    const handled = fresh.flatMap((commit) => commit.events).filter((event) => handlerOf(projection, event.type));
    if (projection.applyMany && fresh.length > 1) {
      if (handled.length > 0) await projection.applyMany(handled, tx);
    } else {
      for (const event of handled) await applyOne(projection, event, tx);
    }
    const events = fresh.reduce((n, commit) => n + commit.events.length, 0);
    // The checkpoint and the wake-up for waiters in one statement, and the commit with it. The
    // notification is delivered on commit, never before: a waiter woken by it reads rows that are there.
    await client.query(
      `WITH moved AS (
         UPDATE ${buildsTable(schemas)} SET checkpoint = ${integer(lastFresh.seq)}, checkpoint_time = ${timeLiteral(client, lastFresh)}, events_applied = events_applied + ${integer(events)}, updated_at = now(), ${STALL_CLEARED}
         WHERE id = ${integer(build.id)} RETURNING id)
       SELECT pg_notify(${client.escapeLiteral(progressChannel(schemas))}, ${client.escapeLiteral(JSON.stringify({ projection: projection.name, build: build.id, status: current.status, seq: lastFresh.seq }))}) FROM moved;
       COMMIT`,
    );
    return { commits: fresh.length, events, checkpoint: lastFresh.seq };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
};

const STALL_CLEARED = 'stalled_seq = NULL, stalled_type = NULL, stalled_sqlstate = NULL, stalled_error = NULL, stalled_since = NULL, stall_attempts = 0, stall_next_at = NULL';

/** A value written into a statement's text: only ever an integer the projector computed. */
const integer = (n: number): string => {
  if (!Number.isSafeInteger(n)) throw new TypeError(`not an integer: ${n}`);
  return String(n);
};

const timeLiteral = (client: ClientBase, commit: LogCommit<AnyEvent>): string => {
  const time = commit.events.at(-1)?.time;
  return time === undefined ? 'NULL' : `${client.escapeLiteral(time)}::timestamptz`;
};

/**
 * The checkpoint moved past commits the projection writes nothing for: one round trip. Counted
 * and notified as a batch is; commits at or below the checkpoint (another runner's) are not counted twice.
 */
const moveCheckpoint = async <E extends AnyEvent>(client: ClientBase, schemas: ProjectorSchemas, build: Pick<Build, 'id'>, projection: ProjectionDefinition<E>, commits: readonly LogCommit<E>[]): Promise<Applied> => {
  const last = commits.at(-1) as LogCommit<E>;
  const table = buildsTable(schemas);
  const seqs = commits.map((commit) => integer(commit.seq)).join(',');
  const counts = commits.map((commit) => integer(commit.events.length)).join(',');
  let results;
  try {
    results = (await client.query(
    `BEGIN; SET LOCAL synchronous_commit TO off;
     WITH old AS (SELECT id, checkpoint, status FROM ${table} WHERE id = ${integer(build.id)} FOR UPDATE),
     moved AS (
       UPDATE ${table} AS b SET checkpoint = ${integer(last.seq)}, checkpoint_time = ${timeLiteral(client, last)},
         events_applied = b.events_applied + (SELECT coalesce(sum(c.n), 0) FROM unnest(ARRAY[${seqs}]::bigint[], ARRAY[${counts}]::int[]) AS c(seq, n) WHERE c.seq > old.checkpoint),
         updated_at = now(), ${STALL_CLEARED}
       FROM old WHERE b.id = old.id AND old.status <> 'retired' AND old.checkpoint < ${integer(last.seq)}
       RETURNING b.id, old.status),
     notified AS (SELECT pg_notify(${client.escapeLiteral(progressChannel(schemas))}, json_build_object('projection', ${client.escapeLiteral(projection.name)}::text, 'build', id, 'status', status, 'seq', ${integer(last.seq)})::text) FROM moved)
     SELECT old.checkpoint, old.status, (SELECT count(*) FROM notified) AS moved FROM old;
     COMMIT`,
  )) as unknown as QueryResult<{ checkpoint: string; status: Build['status']; moved: string }>[];
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
  const row = results[2]?.rows[0];
  if (!row || row.status === 'retired') throw new BuildRetired(build.id);
  const before = Number(row.checkpoint);
  if (Number(row.moved) === 0) return { commits: 0, events: 0, checkpoint: before };
  const fresh = commits.filter((commit) => commit.seq > before);
  return { commits: fresh.length, events: fresh.reduce((n, commit) => n + commit.events.length, 0), checkpoint: last.seq };
};

const applyOne = async <E extends AnyEvent>(projection: ProjectionDefinition<E>, event: StoredEvent<E>, tx: ProjectionTx): Promise<void> => {
  try {
    await handlerOf(projection, event.type)?.(event, tx);
  } catch (error) {
    throw new ApplyFailure(event.seq, event.type, sqlstateOf(error), error);
  }
};

/**
 * Records that `build` cannot apply `failure`'s commit, and that it tries again in `retryInMs`.
 * Returns true the first time this sequence stalls it.
 */
export const recordStall = async (
  db: Pick<ClientBase, 'query'>,
  schemas: ProjectorSchemas,
  buildId: number,
  failure: { seq: number; type: string; sqlstate?: string | undefined; message: string },
  retryInMs: number,
): Promise<boolean> => {
  const { rows } = await db.query<{ first: boolean }>(
    `UPDATE ${buildsTable(schemas)} AS b SET
       stalled_seq = $2, stalled_type = $3, stalled_sqlstate = $4, stalled_error = $5,
       stalled_since = CASE WHEN old.stalled_seq IS DISTINCT FROM $2 THEN now() ELSE old.stalled_since END,
       stall_attempts = CASE WHEN old.stalled_seq IS DISTINCT FROM $2 THEN 1 ELSE old.stall_attempts + 1 END,
       stall_next_at = now() + make_interval(secs => $6::double precision / 1000),
       updated_at = now()
     FROM (SELECT id, stalled_seq, stalled_since, stall_attempts FROM ${buildsTable(schemas)} WHERE id = $1 FOR UPDATE) AS old
     WHERE b.id = old.id
     RETURNING old.stalled_seq IS DISTINCT FROM $2 AS first`,
    [buildId, failure.seq, failure.type, failure.sqlstate ?? null, failure.message, retryInMs],
  );
  return rows[0]?.first ?? false;
};
