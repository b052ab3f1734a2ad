import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type pg from 'pg';
import type { JetStreamEventLog } from '../../src/adapters/eventlog/jetstream-log.js';
import { projectRoot } from '../../src/config.js';
import type { StoredEvent } from '../../src/domain/events/envelope.js';
import { meshEventRegistry, type MeshEvent } from '../../src/domain/registry.js';
import { RANGE_ABOVE_COMMITS } from '../../src/cli/log-read.js';
import { PAGE_ROWS } from '../../src/projections/audit.js';
import { meshProjections } from '../../src/projections/catalogue.js';
import { Projector } from '../../src/projections/projector.js';
import { ident } from '../../src/projections/sql.js';
import { runMesh } from '../helpers/cli.js';
import { openTestLog, type TestLog } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh, waitFor } from '../helpers/test-mesh.js';
import { dropSchemas, FAST, freshSchemas, openPool, servingBuild, testDatabaseUrl, waitServingAt } from '../projections/harness.js';
import { writeMeshLog } from '../projections/mesh-log.js';

// `mesh log` answers from the audit projection and takes each event's data from the log: over a
// mesh's log of a few thousand events, every filter gives exactly what filtering the log itself
// gives, through both ways of fetching the data (commit by commit, and a stretch of the log); an
// index that does not match the log is refused, naming the sequence; and a projection that has
// not reached the log's head is refused, naming how far it got.

interface Want {
  since?: number;
  aggregate?: string;
  types?: string[];
  actor?: string;
  correlation?: string;
  after?: string;
  before?: string;
}

const argsOf = (want: Want): string[] => [
  ...(want.since !== undefined ? ['--since', String(want.since)] : []),
  ...(want.aggregate !== undefined ? ['--aggregate', want.aggregate] : []),
  ...(want.types ?? []).flatMap((type) => ['--type', type]),
  ...(want.actor !== undefined ? ['--actor', want.actor] : []),
  ...(want.correlation !== undefined ? ['--correlation', want.correlation] : []),
  ...(want.after !== undefined ? ['--after', want.after] : []),
  ...(want.before !== undefined ? ['--before', want.before] : []),
];

/** The events the log itself holds for `want`, read and filtered here, as `--json` prints them. */
const fromTheLog = async (log: JetStreamEventLog, want: Want): Promise<unknown[]> => {
  const events: StoredEvent[] = [];
  for await (const event of log.read({ fromSeq: want.since ?? 1, ...(want.aggregate !== undefined ? { aggregate: want.aggregate } : {}) })) {
    if (want.types && !want.types.includes(event.type)) continue;
    if (want.actor !== undefined && !(want.actor.endsWith('*') ? event.actor.startsWith(want.actor.slice(0, -1)) : event.actor === want.actor)) continue;
    if (want.correlation !== undefined && event.correlationId !== want.correlation) continue;
    if (want.after !== undefined && Date.parse(event.time) < Date.parse(want.after)) continue;
    if (want.before !== undefined && Date.parse(event.time) > Date.parse(want.before)) continue;
    events.push(event);
  }
  return JSON.parse(JSON.stringify(events)) as unknown[];
};

const lines = (stdout: string): unknown[] =>
  stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as unknown);

const commitsOf = (events: unknown[]): number => new Set(events.map((event) => (event as StoredEvent).seq)).size;

describe('mesh log answers from the audit projection, with the data from the log', () => {
  let testLog: TestLog;
  let log: JetStreamEventLog;
  let projector: Projector<MeshEvent>;
  let pool: pg.Pool;
  const schemas = freshSchemas();
  let env: Record<string, string>;
  let head: number;
  let times: string[];

  beforeAll(async () => {
    testLog = await openTestLog({ log: { registry: meshEventRegistry() } });
    log = testLog.log;
    const generated = await writeMeshLog(testLog.nc, { ...testLog.settings, key: testLog.key }, { minEvents: 3_000, nodes: 40 });
    // Actors whose names hold LIKE's and regular expressions' metacharacters, which a prefix must match as text.
    const actors = ['agent:50%_off', 'agent:50%xoff', 'agent:50x_off', 'agent:5\\0', 'agent:5.0'];
    for (const [i, actor] of actors.entries()) {
      const data = { node: 'odd', declarationSequence: i, sent: 1, answered: 1, missing: [], unexpected: [] };
      await log.append('fact.odd', [{ type: 'fact.report-mismatch', data }], i, { commandId: uniqueName('odd'), actor });
    }
    head = await log.headSeq();
    expect(head).toBe(generated.headSeq + actors.length);
    times = [];
    for await (const event of log.read()) times.push(event.time);
    pool = openPool();
    projector = new Projector({ databaseUrl: testDatabaseUrl(), nc: testLog.nc, log: { ...testLog.settings, registry: meshEventRegistry() }, projections: meshProjections(), schemas, settings: FAST });
    await projector.start();
    await waitServingAt(pool, schemas, 'audit', head, 120_000);
    env = { MESH_LOG_STREAM: testLog.settings.stream, MESH_LOG_SUBJECT_PREFIX: testLog.settings.subjectPrefix, MESH_PROJECTOR_SCHEMA: schemas.control, MESH_READ_SCHEMA: schemas.read };
  });
  afterAll(async () => {
    await projector.stop();
    await dropSchemas(pool, schemas);
    await pool.end();
    await testLog.close();
  });

  it('gives for every filter exactly what filtering the log gives, fetching few commits one by one and many as a stretch', async () => {
    const some = (await fromTheLog(log, { aggregate: 'fact' }))[3] as StoredEvent;
    const queries: Want[] = [
      {},
      { since: Math.floor(head / 2) },
      { since: head + 1 },
      { aggregate: 'node' },
      { aggregate: 'fact.n5' },
      { aggregate: 'fact.*' },
      { aggregate: 'seat.>', types: ['seat.handed-over'] },
      { types: ['fact.applied', 'fact.stopped'] },
      { types: ['fact.applied'], since: Math.floor(head / 2) },
      { actor: 'contr*' },
      { actor: 'operator:*', aggregate: 'node', since: 100 },
      { actor: 'agent:50%_*' },
      { actor: 'agent:5\\*' },
      { actor: 'agent:5.*' },
      { correlation: some.correlationId },
      { after: times[99] as string, before: times[399] as string },
      { after: times[head - 3] as string },
      { types: ['no.such-type'] },
    ];
    const paths = { gets: 0, stretch: 0, pages: 0 };
    const answers = new Map<Want, unknown[]>();
    for (const want of queries) {
      const result = await runMesh(['log', ...argsOf(want), '--json'], env);
      expect({ want, code: result.code, stderr: result.stderr }).toEqual({ want, code: 0, stderr: '' });
      const expected = await fromTheLog(log, want);
      expect({ want, events: lines(result.stdout) }).toEqual({ want, events: expected });
      answers.set(want, expected);
      if (commitsOf(expected) > RANGE_ABOVE_COMMITS) paths.stretch++;
      else if (expected.length > 0) paths.gets++;
      if (expected.length > PAGE_ROWS) paths.pages++;
    }
    // Both ways of fetching, and answers longer than one page of the index, were taken.
    expect(paths.gets).toBeGreaterThanOrEqual(10);
    expect(paths.stretch).toBeGreaterThanOrEqual(3);
    expect(paths.pages).toBeGreaterThan(0);
    // The metacharacters matched as text.
    const actorsOf = (actor: string) => (answers.get(queries.find((want) => want.actor === actor) as Want) as StoredEvent[]).map((e) => e.actor);
    expect(actorsOf('agent:50%_*')).toEqual(['agent:50%_off']);
    expect(actorsOf('agent:5\\*')).toEqual(['agent:5\\0']);
    expect(actorsOf('agent:5.*')).toEqual(['agent:5.0']);
  });

  it('prints in 100 columns the header, then each event to the second and its data wrapped beneath it', async () => {
    const result = await runMesh(['log', '--aggregate', 'fact.odd', '--actor', 'agent:5.0'], env);
    expect(result.code).toBe(0);
    const [header, event, data] = result.stdout.split('\n');
    expect(header).toMatch(/^SEQ\s+TIME \(UTC\)\s+AGGREGATE@VERSION\s+TYPE\s+ACTOR$/);
    expect(event).toMatch(new RegExp(`^${head}\\s+\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\\s+fact\\.odd@5\\s+fact\\.report-mismatch\\s+agent:5\\.0$`));
    expect(data).toBe(`${' '.repeat(9)}{"node":"odd","declarationSequence":4,"sent":1,"answered":1,"missing":[],"unexpected":[]}`);
  });

  it('-o wide: every field in full on one line, with the command, as the log was printed before', async () => {
    const result = await runMesh(['log', '--aggregate', 'fact.odd', '--actor', 'agent:5.0', '-o', 'wide'], env);
    expect(result.code).toBe(0);
    const [header, event, data] = result.stdout.split('\n');
    expect(header).toMatch(/^SEQ\s+TIME\s+AGGREGATE@VERSION\s+TYPE\s+ACTOR\s+COMMAND$/);
    expect(event).toMatch(new RegExp(`^${head}\\s+\\S+\\s+fact\\.odd@5\\s+fact\\.report-mismatch\\s+agent:5\\.0\\s+odd\\w+$`));
    expect(data).toBe(`${' '.repeat(9)}{"node":"odd","declarationSequence":4,"sent":1,"answered":1,"missing":[],"unexpected":[]}`);
  });

  it('refuses a read schema that does not hold the view, naming it, and ends quietly when its reader goes away', async () => {
    const wrong = await runMesh(['log', '--aggregate', 'fact.odd'], { ...env, MESH_READ_SCHEMA: `${schemas.read}_missing` });
    expect(wrong.code).toBe(6);
    expect(wrong.stderr).toContain(`the read schema ${schemas.read}_missing has no view of audit`);
    expect(wrong.stderr).toContain('MESH_READ_SCHEMA');
    expect(wrong.stdout).toBe('');

    // `mesh log | head -1`: the reader closes the pipe after one line, and mesh stops without a stack trace.
    const child = spawn(process.execPath, [join(projectRoot, 'bin', 'mesh.js'), 'log'], { cwd: projectRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const firstLine = await new Promise<string>((resolve) => child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().split('\n')[0] ?? '')));
    child.stdout.destroy();
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(firstLine).toMatch(/^SEQ\s+TIME/);
    expect(code).toBe(0);
    expect(stderr).not.toContain('EPIPE');
  });

  it('follows: the projection’s matches up to the head it waited for, the marker, then what is appended', async () => {
    const child = spawn(process.execPath, [join(projectRoot, 'bin', 'mesh.js'), 'log', '--follow', '--json', '--aggregate', 'fact.odd', '--actor', 'agent:*'], {
      cwd: projectRoot,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await waitFor(`the caught-up marker (stderr: ${stderr})`, async () => stdout.includes('caughtUp'), 60_000);
      const data = { node: 'odd', declarationSequence: 9, sent: 1, answered: 1, missing: [], unexpected: [] };
      await log.append('fact.odd', [{ type: 'fact.report-mismatch', data }], 5, { commandId: uniqueName('odd'), actor: 'controller' });
      const live = await log.append('fact.odd', [{ type: 'fact.report-mismatch', data: { ...data, declarationSequence: 10 } }], 6, { commandId: uniqueName('odd'), actor: 'agent:late' });
      await waitFor('the live event', async () => stdout.includes(live.events[0]?.id ?? 'never'), 30_000);
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      const printed = lines(stdout);
      expect(printed).toEqual([...(await fromTheLog(log, { aggregate: 'fact.odd', actor: 'agent:*' })).slice(0, 5), { caughtUp: head }, JSON.parse(JSON.stringify(live.events[0]))]);
    } finally {
      child.kill('SIGKILL');
    }
    head = await log.headSeq();
    await waitServingAt(pool, schemas, 'audit', head);
  });

  it('refuses, naming the sequence, an index that does not match the log, by either way of fetching', async () => {
    const build = await servingBuild(pool, schemas, 'audit');
    const table = `${ident(build?.schemaName ?? 'missing')}.${ident('audit')}`;
    const target = (await fromTheLog(log, { aggregate: 'fact.n5', types: ['fact.stopped'] }))[0] as StoredEvent;
    await pool.query(`UPDATE ${table} SET event_id = 'forged' WHERE seq = $1 AND event_index = $2`, [target.seq, target.index]);
    try {
      for (const args of [['--aggregate', 'fact.n5'], []]) {
        const result = await runMesh(['log', ...args], env);
        expect(result.code).toBe(7);
        expect(result.stderr).toContain(`the audit projection lists fact.stopped forged at seq ${target.seq} (event ${target.index}), but the log holds fact.stopped ${target.id} there`);
        expect(result.stdout).not.toContain('forged');
      }
    } finally {
      await pool.query(`UPDATE ${table} SET event_id = $3 WHERE seq = $1 AND event_index = $2`, [target.seq, target.index, target.id]);
    }
    // A row for an event the commit does not have.
    await pool.query(`INSERT INTO ${table} SELECT seq, 7, 'invented', type, aggregate, version, actor, command_id, causation_id, correlation_id, time FROM ${table} WHERE seq = $1 AND event_index = 0`, [target.seq]);
    try {
      const result = await runMesh(['log', '--since', String(target.seq), '--aggregate', 'fact.n5', '--json'], env);
      expect(result.code).toBe(7);
      expect(result.stdout).toContain(`at seq ${target.seq} (event 7), but the log holds no such event there`);
    } finally {
      await pool.query(`DELETE FROM ${table} WHERE seq = $1 AND event_index = 7`, [target.seq]);
    }
  });
});

describe('mesh log refuses when the audit projection cannot answer', () => {
  let t: TestMesh;
  let pool: pg.Pool;
  const schemas = freshSchemas();
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await openTestMesh();
    pool = openPool();
    env = { MESH_LOG_STREAM: t.names.logStream, MESH_LOG_SUBJECT_PREFIX: t.names.logPrefix, MESH_SUBJECT_PREFIX: t.names.prefix, MESH_PROJECTOR_SCHEMA: schemas.control, MESH_READ_SCHEMA: schemas.read, MESH_READ_TIMEOUT_MS: '500' };
  });
  afterAll(async () => {
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
  });

  it('says no projection is built while no controller has ever folded this log, and prints nothing', async () => {
    const result = await runMesh(['log'], env);
    expect(result.code).toBe(6);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`no projection has been built in schema ${schemas.control} yet`);
    expect(result.stderr).toContain('`npx mesh dev up` starts it');
  });

  it('answers while the controller folds the log, and names how far the projection got once it stops', async () => {
    const controller = await t.startController({ projector: { databaseUrl: testDatabaseUrl(), schemas } });
    const head = (await t.jsm.streams.info(t.names.logStream)).state.last_seq;
    const answered = await runMesh(['log', '--json'], { ...env, MESH_READ_TIMEOUT_MS: '30000' });
    expect(answered.code).toBe(0);
    expect(lines(answered.stdout)).toHaveLength(head);

    await controller.stop();
    const reached = (await servingBuild(pool, schemas, 'audit'))?.checkpoint;
    expect(reached).toBeGreaterThanOrEqual(head);
    const added = await t.run({ type: 'add-node', node: 'late' });
    for (const args of [['log'], ['log', '--follow'], ['log', '--type', 'node.added', '--json']]) {
      const result = await runMesh(args, env);
      expect({ args, code: result.code }).toEqual({ args, code: 6 });
      // --json puts the refusal on stdout as a document; otherwise it is on stderr and stdout is empty.
      const refusal = args.includes('--json') ? result.stdout : result.stderr;
      expect(refusal).toContain(`projections have not reached seq ${added.seq} after 500 ms: audit is at seq ${reached}`);
      // No controller answers on this mesh's prefix: the refusal says so, rather than guessing.
      expect(refusal).toContain(`The controller did not answer on ${t.names.prefix}.seat.mesh-controller.tool.health: is it running?`);
      if (!args.includes('--json')) expect(result.stdout).toBe('');
    }
  });
});
