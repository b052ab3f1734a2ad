import type { ClientBase } from 'pg';
import type { AnyEvent, StoredEvent } from '../domain/events/envelope.js';
import type { LogCommit } from './commit-reader.js';
import { buildsTable, progressChannel, readBuild, type Build, type ProjectorSchemas } from './control.js';
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
 */
export const applyCommits = async <E extends AnyEvent>(
  client: ClientBase,
  schemas: ProjectorSchemas,
  build: Pick<Build, 'id' | 'schemaName'>,
  projection: ProjectionDefinition<E>,
  commits: readonly LogCommit<E>[],
): Promise<Applied> => {
  await client.query('BEGIN; SET LOCAL synchronous_commit TO off');
  try {
    const current = await readBuild(client, schemas, build.id, true);
    if (!current || current.status === 'retired') throw new BuildRetired(build.id);
    const fresh = commits.filter((commit) => commit.seq > current.checkpoint);
    const last = fresh.at(-1);
    if (!last) {
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
    const time = last.events.at(-1)?.time ?? null;
    // The checkpoint and the wake-up for waiters in one statement. The notification is delivered
    // on commit, never before: a waiter woken by it reads rows that are there.
    await client.query(
      `WITH moved AS (
         UPDATE ${buildsTable(schemas)} SET checkpoint = $2, checkpoint_time = $3, events_applied = events_applied + $4, updated_at = now(),
           stalled_seq = NULL, stalled_type = NULL, stalled_sqlstate = NULL, stalled_error = NULL, stalled_since = NULL, stall_attempts = 0, stall_next_at = NULL
         WHERE id = $1 RETURNING id)
       SELECT pg_notify($5, $6) FROM moved`,
      [build.id, last.seq, time, events, progressChannel(schemas), JSON.stringify({ projection: projection.name, build: build.id, status: current.status, seq: last.seq })],
    );
    await client.query('COMMIT');
    return { commits: fresh.length, events, checkpoint: last.seq };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
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
