import { jetstreamManager } from '@nats-io/jetstream';
import pg from 'pg';
import { connectAsOperator } from './bus-connection.js';
import { heldError } from '../adapters/eventlog/chain-reader.js';
import type { JetStreamEventLog } from '../adapters/eventlog/jetstream-log.js';
import { verifyLogStream } from '../adapters/eventlog/log-stream.js';
import { loadConfig, type MeshConfig } from '../config.js';
import { databaseUrlFor, withoutPassword } from '../adapters/database-logins.js';
import { parseSequence } from '../domain/limits.js';
import { CorruptEventError, UnavailableError, ValidationError } from '../errors.js';
import { schemasFromEnv, stalledSequences, type ProjectorSchemas } from '../projections/control.js';
import { ReadBarrier } from '../projections/read-barrier.js';
import { ident, isConnectionFailure, sqlstateOf } from '../projections/sql.js';
import { askHealth } from '../controller/health-tool.js';
import { behindHint, storeUnreachable } from './store-unreachable.js';
import type { NatsConnection } from '@nats-io/nats-core';

// Reads that see the writes: a query first waits until the projections it reads have reached the
// log's head as of the query (or the sequence a command's reply carried, `--at-least SEQ`), woken
// by the projector's NOTIFY, then reads their views. If they do not get there in time it says how
// far each got and why, instead of answering from tables that are behind.

export const DEFAULT_READ_TIMEOUT_MS = 10_000;
const TIMER_MAX_MS = 2 ** 31 - 1;

export const readTimeoutMs = (env: NodeJS.ProcessEnv = process.env): number => {
  const value = Number(env.MESH_READ_TIMEOUT_MS ?? DEFAULT_READ_TIMEOUT_MS);
  if (!Number.isFinite(value) || value < 0 || value > TIMER_MAX_MS) throw new ValidationError(`MESH_READ_TIMEOUT_MS "${env.MESH_READ_TIMEOUT_MS}" is not a number of milliseconds from 0 to ${TIMER_MAX_MS} (Node's longest timer, about 24.8 days)`, { field: 'MESH_READ_TIMEOUT_MS' });
  return value;
};

export const atLeastFlag = (value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const parsed = parseSequence(value);
  if ('why' in parsed) throw new ValidationError(`--at-least must be a log sequence: ${parsed.why}`, { field: '--at-least', value });
  return parsed.seq;
};

/**
 * A projection stalled at a commit the log holds readers at is not behind, it is held: waiting for
 * it would only time out. The commit is judged by the log itself (one voided since is not).
 */
const heldProjection = async (db: pg.Pool, schemas: ProjectorSchemas, projections: readonly string[], seq: number, openLog: () => Promise<JetStreamEventLog>): Promise<CorruptEventError | undefined> => {
  const stalled = await stalledSequences(db, schemas, projections, seq).catch(() => [] as number[]);
  // The log (and every event's schema, to read it) is loaded only when a projection is stalled.
  if (stalled.length === 0) return undefined;
  const log = await openLog();
  for (const at of stalled) {
    const found = await log.inspect(at);
    if (found.exists && found.problem !== null && !found.voided) return heldError(at, found.aggregate, found.problem);
  }
  return undefined;
};

export interface ReadSession {
  config: MeshConfig;
  nc: NatsConnection;
  db: pg.Pool;
  schemas: ProjectorSchemas;
  /** a view of the read schema, quoted: `"mesh"."seats"` */
  view: (table: string) => string;
  /** the sequence the read waited for */
  seq: number;
  /** set when the wait timed out and the caller asked to read anyway (the overview) */
  behind?: UnavailableError;
}

/**
 * Opens the read side, waits until `projections` have reached `atLeast` (default: the log's head
 * now), then runs `work`. With `readBehind`, a wait that times out is handed to `work` instead of
 * thrown, for a caller that reports how far behind it is.
 */
export const withReads = async <T>(
  projections: readonly string[],
  options: { atLeast?: number | undefined; readBehind?: boolean },
  work: (session: ReadSession) => Promise<T>,
): Promise<T> => {
  const config = loadConfig();
  const schemas = schemasFromEnv();
  const timeoutMs = readTimeoutMs();
  // Reads log in as the reader: it may read the projections and node status, and change nothing.
  const databaseUrl = databaseUrlFor('reader', config);
  const db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  db.on('error', () => undefined);
  // PostgreSQL logs the reader in while the bus connects and the log is looked at: the two are
  // apart until a read needs both. Its failure is judged after the bus's, as it always was.
  const opening = ReadBarrier.open(databaseUrl, db, schemas).then(
    (opened) => ({ opened }),
    (cause: unknown) => ({ cause }),
  );
  let nc: NatsConnection;
  try {
    nc = await connectAsOperator(config, 'mesh-cli-read');
  } catch (error) {
    await opening;
    await db.end().catch(() => undefined);
    throw error;
  }
  try {
    const settings = { stream: config.logStream, subjectPrefix: config.logSubjectPrefix };
    const jsm = await jetstreamManager(nc);
    const logInfo = await verifyLogStream(jsm, settings, config.natsUrl);
    const seq = options.atLeast ?? logInfo.state.last_seq;
    const opened = await opening;
    if ('cause' in opened) {
      const { cause } = opened;
      if (isConnectionFailure(cause)) throw await storeUnreachable(nc, config, databaseUrl, cause);
      const url = withoutPassword(databaseUrl);
      throw new UnavailableError(`cannot use PostgreSQL at ${url}: ${(cause as Error).message}. Is the stack up? Run \`npx mesh dev up\`, or set MESH_DATABASE_URL.`, { url }, { cause });
    }
    const barrier = opened.opened;
    let behind: UnavailableError | undefined;
    try {
      const openLog = async (): Promise<JetStreamEventLog> => {
        const [{ JetStreamEventLog: Log }, { meshEventRegistry }] = await Promise.all([import('../adapters/eventlog/jetstream-log.js'), import('../domain/registry.js')]);
        return new Log(nc, { ...settings, registry: meshEventRegistry() });
      };
      const held = await heldProjection(db, schemas, projections, seq, openLog);
      if (held) {
        // Refused at once (exit 7), naming the commit; the overview reads what it can and says so.
        if (!options.readBehind) throw held;
        behind = new UnavailableError(`the projections are held at a commit: ${held.message}`, held.details);
      } else {
        await barrier.waitFor(projections, seq, timeoutMs);
      }
    } catch (error) {
      if (error instanceof CorruptEventError) throw error;
      if (isConnectionFailure(error)) throw await storeUnreachable(nc, config, databaseUrl, error);
      // Behind: the controller says whether it runs and whether its store answers, rather than a guess.
      const hint = behindHint(await askHealth(nc, config.subjectPrefix), config.subjectPrefix);
      if (sqlstateOf(error) === '42P01') {
        throw new UnavailableError(`no projection has been built in schema ${schemas.control} yet. ${hint}`, { schema: schemas.control }, { cause: error });
      }
      if (!(error instanceof UnavailableError)) throw error;
      behind = new UnavailableError(`${error.message}. ${hint}`, error.details, { cause: error });
      if (!options.readBehind) throw behind;
    }
    try {
      return await work({ config, nc, db, schemas, view: (table) => `${ident(schemas.read)}.${ident(table)}`, seq, ...(behind ? { behind } : {}) });
    } catch (error) {
      if (isConnectionFailure(error)) throw await storeUnreachable(nc, config, databaseUrl, error);
      if (sqlstateOf(error) !== '42P01') throw error;
      throw new UnavailableError(
        `the read schema ${schemas.read} has no view of ${projections.join(', ')} (${(error as Error).message}): the controller folding into ${schemas.control} serves its views elsewhere. Check MESH_READ_SCHEMA.`,
        { schema: schemas.read },
        { cause: error },
      );
    }
  } finally {
    // Closed whether or not a read came to use it.
    const opened = await opening;
    if ('opened' in opened) await opened.opened.close().catch(() => undefined);
    await db.end().catch(() => undefined);
    await nc.close();
  }
};
