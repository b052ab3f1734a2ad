import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { projectRoot } from '../../src/config.js';
import { auditProjection } from '../../src/projections/audit.js';
import { appendMany, dropSchemas, freshSchemas, rowsOf, servingBuild, startTestProjector, useLogAndPool, waitServingAt } from './harness.js';
import { ledger } from './test-projections.js';

const EVENTS = Number(process.env.MESH_TEST_KILL_EVENTS ?? 20_000);
/** How much longer than CI's size a run may take: MESH_TEST_KILL_EVENTS=1000000 (the size) is fifty times the events. */
const SCALE = Math.max(1, EVENTS / 20_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a projector killed again and again while the log grows', () => {
  const shared = useLogAndPool();

  it(`skips no event and applies none twice over ${EVENTS} events (compared with a rebuild)`, async () => {
    const { testLog, pool } = shared;
    const schemas = freshSchemas();
    const rebuiltSchemas = freshSchemas();
    const spawnProjector = (): ChildProcess =>
      spawn(process.execPath, ['--import', 'tsx', join(projectRoot, 'tests/projections/fixtures/run-projector.ts')], {
        cwd: projectRoot,
        env: {
          ...process.env,
          TEST_LOG_STREAM: testLog.settings.stream,
          TEST_LOG_PREFIX: testLog.settings.subjectPrefix,
          TEST_CONTROL_SCHEMA: schemas.control,
          TEST_READ_SCHEMA: schemas.read,
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
    /** Resolves when the child says its projector started (tsx compiles it first, slowly on a busy machine). */
    const started = (child: ChildProcess) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the projector process did not start in 60 s')), 60_000);
        child.stdout?.on('data', (chunk: Buffer) => {
          if (chunk.toString().includes('started')) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    const killed = (child: ChildProcess) => new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
    const checkpoint = async () => (await servingBuild(pool, schemas, 'ledger').catch(() => undefined))?.checkpoint ?? 0;

    let appending = true;
    const appended = appendMany(testLog, EVENTS, (i) => ({ type: 'test.counted', data: { n: i } }), { aggregates: 500, window: 8 }).finally(() => (appending = false));
    // Awaited once the kills are over; a failed append fails the test then, not the process now.
    appended.catch(() => undefined);
    let kills = 0;
    const progress: number[] = [];
    try {
      // Until the appends are done, and at least five kills in any case.
      while (appending || kills < 5) {
        const from = await checkpoint();
        const child = spawnProjector();
        await started(child);
        // Kill it once it has folded something (or has had its chance), at a random moment.
        const deadline = Date.now() + 10_000;
        while (Date.now() < deadline && (await checkpoint()) <= from) await sleep(20);
        await sleep(200 + Math.random() * 1_000);
        child.kill('SIGKILL');
        await killed(child);
        kills++;
        progress.push(await checkpoint());
      }
      const head = await appended;
      const last = spawnProjector();
      try {
        await waitServingAt(pool, schemas, 'ledger', head, 60_000 * SCALE);
        await waitServingAt(pool, schemas, 'audit', head, 60_000 * SCALE);
      } finally {
        last.kill('SIGKILL');
        await killed(last);
      }
      expect(kills).toBeGreaterThanOrEqual(5);
      process.stderr.write(`killed the projector ${kills} times; checkpoints when killed: ${progress.join(' ')}\n`);
      expect(progress.at(-1)).toBeGreaterThan(0);

      const ledgerBuild = await servingBuild(pool, schemas, 'ledger');
      const counts = (await pool.query(`SELECT count(*)::int AS n, count(DISTINCT (seq, event_index))::int AS distinct_n FROM "${ledgerBuild?.schemaName}".entries`)).rows[0];
      expect(counts).toEqual({ n: EVENTS, distinct_n: EVENTS });

      const rebuild = await startTestProjector(testLog, { schemas: rebuiltSchemas, projections: [ledger(), auditProjection] });
      try {
        const rebuiltLedger = await waitServingAt(pool, rebuiltSchemas, 'ledger', head, 60_000 * SCALE);
        const rebuiltAudit = await waitServingAt(pool, rebuiltSchemas, 'audit', head, 60_000 * SCALE);
        const auditBuild = await servingBuild(pool, schemas, 'audit');
        expect(await rowsOf(pool, ledgerBuild?.schemaName as string, 'entries', 'seq, event_index')).toEqual(await rowsOf(pool, rebuiltLedger?.schemaName as string, 'entries', 'seq, event_index'));
        expect(await rowsOf(pool, ledgerBuild?.schemaName as string, 'totals', 'aggregate')).toEqual(await rowsOf(pool, rebuiltLedger?.schemaName as string, 'totals', 'aggregate'));
        expect(await rowsOf(pool, auditBuild?.schemaName as string, 'audit', 'seq, event_index')).toEqual(await rowsOf(pool, rebuiltAudit?.schemaName as string, 'audit', 'seq, event_index'));
      } finally {
        await rebuild.stop();
      }
    } finally {
      await appended.catch(() => undefined);
      await dropSchemas(pool, schemas);
      await dropSchemas(pool, rebuiltSchemas);
    }
  }, 180_000 * SCALE);
});
