import { jetstreamManager } from '@nats-io/jetstream';
import pg from 'pg';
import { pino } from 'pino';
import { loadConfig } from '../config.js';
import { connectAsOperator } from './bus-connection.js';
import { databaseUrlFor, withoutPassword } from '../adapters/database-logins.js';
import { verifyLogStream } from '../adapters/eventlog/log-stream.js';
import { passedLine } from '../adapters/eventlog/chain-reader.js';
import { meshEventRegistry, type MeshEvent } from '../domain/registry.js';
import { NotFoundError, UnavailableError } from '../errors.js';
import { requestRebuild } from '../projections/builds.js';
import type { ProjectionDefinition } from '../projections/projection.js';
import { meshProjections } from '../projections/catalogue.js';
import { CommitReader } from '../projections/commit-reader.js';
import { ensureControlSchema, readBuild, schemasFromEnv, type ProjectorSchemas } from '../projections/control.js';
import { terminalProgress } from '../projections/progress.js';
import { connectClient } from '../projections/projector.js';
import { BuildRunner, runnerSettingsFromEnv } from '../projections/runner.js';
import { allHealthy, projectionsStatus, type BuildState } from '../projections/status.js';
import { isConnectionFailure } from '../projections/sql.js';
import { storeUnreachable } from './store-unreachable.js';
import { output, say, table, type Output, proseLine } from './output.js';

// `mesh projections status|rebuild`: how far each projection is behind the log, and a forced
// blue/green rebuild of one or more, in turn.


const projectionsCommand = async (sub: 'status' | 'rebuild', names: readonly string[], values: { json?: true; output?: string }): Promise<number> => {
  const out = output(values.json ?? false, values.output);
  const config = loadConfig();
  // `status` only reads; `rebuild` builds projections, so it logs in as the role that owns them.
  const databaseUrl = databaseUrlFor(sub === 'rebuild' ? 'projector' : 'reader', config);
  const nc = await connectAsOperator(config, 'mesh-projections');
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  pool.on('error', () => undefined);
  try {
    const settings = { stream: config.logStream, subjectPrefix: config.logSubjectPrefix };
    await verifyLogStream(await jetstreamManager(nc), settings, config.natsUrl);
    const reader = new CommitReader(nc, { ...settings, registry: meshEventRegistry() });
    await pool.query('SELECT 1').catch(async (cause: unknown) => {
      if (isConnectionFailure(cause)) throw await storeUnreachable(nc, config, databaseUrl, cause);
      const url = withoutPassword(databaseUrl);
      throw new UnavailableError(`cannot reach PostgreSQL at ${url}: ${(cause as Error).message}. Is the stack up? Run \`npx mesh dev up\`, or set MESH_DATABASE_URL.`, { url }, { cause });
    });
    switch (sub) {
      case 'status': {
        const states = await projectionsStatus(pool, schemasFromEnv(), reader, meshProjections());
        if (out.json) for (const state of states) out.data(state);
        else printStatus(out, states);
        // Absence is not health: a stalled, lagging or unbuilt projection makes the exit code say so.
        return allHealthy(states) ? 0 : 1;
      }
      case 'rebuild': {
        // Every name is checked before anything is built: a typo in the third rebuilds none.
        const chosen = projectionsNamed(names);
        const schemas = schemasFromEnv();
        await ensureControlSchema(pool, schemas);
        for (const projection of chosen) await rebuild(projection, { out, pool, reader, databaseUrl, schemas });
        return 0;
      }
    }
  } finally {
    await pool.end();
    await nc.close();
  }
};

/** The projections `names` name, in the order given (each once); refused whole when one is unknown. */
const projectionsNamed = (names: readonly string[]): ProjectionDefinition<MeshEvent>[] => {
  const projections = meshProjections();
  const known = projections.map((p) => p.name).join(', ');
  const unknown = names.filter((name) => !projections.some((p) => p.name === name));
  if (unknown.length > 0) throw new NotFoundError(`no projection named ${unknown.map((name) => `"${name}"`).join(', ')}; the projections are: ${known}`, { projection: unknown[0] });
  return [...new Set(names)].map((name) => projections.find((p) => p.name === name) as ProjectionDefinition<MeshEvent>);
};

const rebuild = async (projection: ProjectionDefinition<MeshEvent>, deps: { out: Output; pool: pg.Pool; reader: CommitReader<MeshEvent>; databaseUrl: string; schemas: ProjectorSchemas }): Promise<void> => {
  const build = await requestRebuild(deps.pool, deps.schemas, projection);
  const quiet = deps.out.json || !process.stderr.isTTY;
  // On a terminal the progress line is the report; otherwise (a pipe, --json) the structured log is.
  const logger = pino({ level: quiet ? 'info' : 'warn', base: { component: 'mesh-projections-rebuild' } }, pino.destination(2));
  if (!deps.out.json) {
    say(
      build.status === 'serving'
        ? `building ${projection.name} v${projection.version} into ${build.schemaName} from seq 1; it is the first build, so it serves as it fills`
        : `rebuilding ${projection.name} v${projection.version} into ${build.schemaName} from seq 1; the current build keeps serving until this one has caught up`,
    );
  }
  const abort = new AbortController();
  const onSignal = (): void => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const runner = new BuildRunner(
      {
        pool: deps.pool,
        connect: () => connectClient(deps.databaseUrl),
        reader: deps.reader,
        schemas: deps.schemas,
        projection,
        logger,
        settings: runnerSettingsFromEnv(),
        onProgress: terminalProgress(),
        untilServing: true,
        onStandby: () => {
          if (!deps.out.json) say('another process (a running controller) holds this build and is folding it; waiting for it to take over');
        },
        onStall: (stall) => say(`stalled at seq ${stall.seq} (${stall.type}${stall.sqlstate ? `, SQLSTATE ${stall.sqlstate}` : ''}): ${stall.error}; retrying — fix the cause or interrupt`),
        onPassed: (passed) => say(passedLine(passed)),
      },
      build,
    );
    const outcome = await runner.run(abort.signal);
    const after = await readBuild(deps.pool, deps.schemas, build.id);
    if (outcome === 'stopped' && after?.status === 'serving') {
      if (deps.out.json) deps.out.data({ rebuilt: projection.name, version: after.version, generation: after.generation, schema: after.schemaName, checkpoint: after.checkpoint, events: after.eventsApplied });
      else deps.out.line(`${projection.name} v${after.version} (generation ${after.generation}) now serves: ${after.eventsApplied} events, checkpoint seq ${after.checkpoint}`);
      return;
    }
    const why = abort.signal.aborted ? 'interrupted; the shadow build stays and resumes from its checkpoint when run again' : 'another build took over before this one finished';
    throw new UnavailableError(`rebuild of ${projection.name} did not finish: ${why}`, { projection: projection.name, build: build.id });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
};

const printStatus = (out: Output, states: readonly BuildState[]): void => {
  const header = ['PROJECTION', 'STATUS', 'VERSION', 'CHECKPOINT', 'HEAD', 'LAG', 'LAG(s)', 'STALL'];
  const rows = states.map((s) => [
    s.projection,
    // A build that applies nothing while the log moves is not "serving", whatever its row says.
    s.notMoving ? 'NOT MOVING' : s.status,
    s.version === undefined ? `(code v${s.codeVersion})` : `v${s.version}${s.codeVersion !== undefined && s.codeVersion !== s.version ? ` (code v${s.codeVersion})` : ''}`,
    String(s.checkpoint),
    String(s.headSeq),
    String(s.lagCommits),
    s.lagSeconds === null ? '?' : s.lagSeconds.toFixed(1),
    s.stall
      ? `at seq ${s.stall.seq} ${s.stall.type}${s.stall.sqlstate ? ` SQLSTATE ${s.stall.sqlstate}` : ''} since ${s.stall.since.toISOString()} (${s.stall.attempts} ${s.stall.attempts === 1 ? 'try' : 'tries'}${s.stall.nextAttemptAt ? `, next at ${s.stall.nextAttemptAt.toISOString()}` : ''}): ${s.stall.error}`
      : '-',
  ]);
  table(out, header, rows);
  out.line("LAG counts log entries (commits) not applied yet; STALL '-': not stalled.");
  const problems = states.flatMap((s) => (s.problem ? [s.problem] : []));
  if (problems.length > 0) out.line('problems:');
  for (const problem of problems) proseLine(out, `  ${problem}`);
};

export const projectionsStatusVerb = (values: { json?: true; output?: string }): Promise<number> => projectionsCommand('status', [], values);
export const projectionsRebuildVerb = (names: string[], values: { json?: true }): Promise<number> => projectionsCommand('rebuild', names, values);
