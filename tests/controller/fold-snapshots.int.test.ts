import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { pino, type Logger } from 'pino';
import { foldCodeVersion } from '../../src/adapters/fold-version.js';
import { newIdentity, type Identity } from '../../src/adapters/identity.js';
import { FoldSnapshotStore } from '../../src/adapters/nats/fold-snapshot-store.js';
import { Controller } from '../../src/controller/controller.js';
import { FoldSnapshots } from '../../src/controller/fold-snapshots.js';
import { CatchUpFold, MeshService } from '../../src/controller/mesh-service.js';
import { MeshView } from '../../src/controller/mesh-view.js';
import type { MeshState } from '../../src/domain/mesh/state.js';
import { foldDifference } from '../helpers/fold-difference.js';
import { fixtureManifest } from '../helpers/given.js';
import { openTestMesh, waitFor, type TestMesh } from '../helpers/test-mesh.js';

// The controller's view starts from the newest snapshot of its fold that passes every check, and
// folds only the log after it; any other snapshot is ignored, saying which and why, and the fold
// starts from seq 1. Whatever it starts from, it ends as the fold of the whole log.

const assign = (module: string, node: string, hold: string[] = []) => ({ type: 'assign', module, node, hold, pins: {}, values: {}, placements: {} }) as const;

describe('the controller starts from a snapshot of its fold', () => {
  let t: TestMesh;
  let lines: { level: number; msg: string; reason?: string }[];
  let logger: Logger;
  const views: MeshView[] = [];

  beforeEach(async () => {
    t = await openTestMesh();
    lines = [];
    logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) });
    for (const name of ['nats', 'vault', 'postgres', 'distribution', 'gitea']) await t.run({ type: 'register-module', manifest: fixtureManifest(name) });
    for (const node of ['alpha', 'beta', 'gamma']) await t.run({ type: 'add-node', node });
    await t.run(assign('nats', 'alpha', ['mesh-broker']));
  });
  afterEach(async () => {
    for (const view of views.splice(0)) await view.stop();
    await t.close();
  });

  const keeper = (options: { signer?: Identity; codeVersion?: string; log?: ConstructorParameters<typeof FoldSnapshots>[0]['log'] } = {}) =>
    new FoldSnapshots({
      store: new FoldSnapshotStore(t.nc, { logStream: t.names.logStream, fold: 'mesh' }),
      log: options.log ?? t.newLog(),
      stream: t.names.logStream,
      codeVersion: options.codeVersion ?? foldCodeVersion(),
      signer: options.signer ?? t.controllerKey,
      logger,
    });

  /** A view as the controller process runs one; `events` counts what it folds. */
  const startView = (snapshots: FoldSnapshots, schedule = { everyEvents: 1_000_000, everySeconds: 3_600 }) => {
    const view = new MeshView(t.newLog(), { logger, snapshots: { keeper: snapshots, schedule } });
    const folded = { events: 0 };
    view.onChange((change) => {
      if (change.kind === 'event') folded.events++;
    });
    view.start();
    views.push(view);
    return { view, folded };
  };

  const stopped = async (view: MeshView) => {
    views.splice(views.indexOf(view), 1);
    await view.stop();
  };

  /** The fold of the whole log from seq 1, with no snapshot. */
  const wholeFold = async (): Promise<MeshState> => new MeshService(t.newLog()).current();

  const expectWholeLog = async (state: MeshState) => {
    expect(foldDifference(state, await wholeFold())).toBeUndefined();
  };

  it('folds from seq 1 when none is stored, writes one when it stops, and starts from it after, folding only the tail', async () => {
    const first = startView(keeper());
    const { state } = await first.view.atHead();
    const stoppedAt = state.seq;
    expect(first.view.startedFrom()).toEqual({ seq: 0, snapshot: false, reason: expect.stringMatching(/no snapshot is stored at mesh-fold-snapshots_LOG_\w+\/mesh/) });
    await stopped(first.view);
    expect(lines.some((line) => line.msg.startsWith(`snapshot of the fold at seq ${stoppedAt} written`))).toBe(true);

    const tail = [await t.run(assign('vault', 'beta', ['mesh-vault'])), await t.run(assign('postgres', 'gamma', ['mesh-store']))];
    const tailEvents = tail.reduce((n, result) => n + result.events.length, 0);
    const second = startView(keeper());
    const resumed = await second.view.atHead();
    expect(second.view.startedFrom()).toEqual({ seq: stoppedAt, snapshot: true });
    expect(lines.some((line) => line.msg === `starting from the snapshot of the fold at seq ${stoppedAt}; following the log from seq ${stoppedAt + 1}`)).toBe(true);
    expect(second.folded.events).toBe(tailEvents);
    expect(resumed.state.seq).toBe(tail[1]?.seq);
    await expectWholeLog(resumed.state);

    // The controller on a view that started from a snapshot composes every node once it has caught up.
    const controller = new Controller(t.nc, second.view, t.newLog(), { names: { nodesStream: t.names.nodesStream, controlStream: t.names.controlStream, prefix: t.names.prefix }, actor: 'controller', controllerKey: t.controllerKey, logger });
    await controller.start();
    try {
      for (const node of ['alpha', 'beta', 'gamma']) await waitFor(`${node}'s declaration`, () => t.declarationOf(node));
      expect((await t.declarationOf('gamma'))?.assignments.map((a) => a.module)).toEqual(['postgres']);
    } finally {
      await controller.stop();
    }

    // A fold of a process that follows nothing starts from it too.
    const catchUp = new CatchUpFold(t.newLog(), { snapshots: keeper() });
    await expectWholeLog((await catchUp.atHead()).state);
    expect(catchUp.startedFrom()).toEqual({ seq: stoppedAt, snapshot: true });
  });

  it('writes one every N events once caught up', async () => {
    const { view } = startView(keeper(), { everyEvents: 3, everySeconds: 3_600 });
    await view.atHead();
    for (const node of ['d1', 'd2', 'd3', 'd4']) await t.run({ type: 'add-node', node });
    const store = new FoldSnapshotStore(t.nc, { logStream: t.names.logStream, fold: 'mesh' });
    const written = await waitFor('a snapshot past the first three', async () => {
      const seq = Number((await store.read())?.meta.seq ?? 0);
      return seq >= view.mesh().seq - 1 ? seq : undefined;
    });
    expect(written).toBeGreaterThan(0);
  });

  /** Writes a snapshot of the whole log as `snapshots` would, then starts a view with this process's own keeper. */
  const startAfter = async (snapshots: FoldSnapshots) => {
    await snapshots.save(await wholeFold());
    const { view, folded } = startView(keeper());
    const { state } = await view.atHead();
    await expectWholeLog(state);
    const ignored = lines.find((line) => line.msg.includes(' is ignored: '));
    return { start: view.startedFrom(), folded: folded.events, said: ignored?.msg ?? '' };
  };

  it('ignores one written by another code version of the fold, and says so', async () => {
    const { start, folded, said } = await startAfter(keeper({ codeVersion: 'a'.repeat(64) }));
    expect(start).toMatchObject({ seq: 0, snapshot: false });
    expect(start?.reason).toMatch(/is ignored: another code version of the fold wrote it \(aaaaaaaaaaaa; this process runs [0-9a-f]{12}\)/);
    expect(said).toMatch(/another code version of the fold wrote it .*; folding the log from seq 1$/);
    expect(folded).toBeGreaterThan(0);
  });

  it('ignores one whose bytes were changed, and says so', async () => {
    await keeper().save(await wholeFold());
    const store = new FoldSnapshotStore(t.nc, { logStream: t.names.logStream, fold: 'mesh' });
    const good = await store.read();
    const bytes = Buffer.from((await good?.bytes()) ?? []);
    bytes[bytes.length - 3] = (bytes[bytes.length - 3] ?? 0) ^ 0xff;
    await store.write({ ...good?.meta }, bytes, 'changed');
    const { view } = startView(keeper());
    await expectWholeLog((await view.atHead()).state);
    expect(view.startedFrom()?.reason).toMatch(/is ignored: its bytes are not the ones signed/);
    expect(lines.some((line) => /its bytes are not the ones signed .*; folding the log from seq 1$/.test(line.msg))).toBe(true);
  });

  it('ignores one signed by another key, and says so', async () => {
    const { start, said } = await startAfter(keeper({ signer: newIdentity() }));
    expect(start?.snapshot).toBe(false);
    expect(start?.reason).toMatch(/is ignored: its signature does not verify under the log's writer key/);
    expect(said).toContain("its signature does not verify under the log's writer key");
  });

  it('ignores one taken of a log that differs at its sequence, and says so', async () => {
    const log = t.newLog();
    const elsewhere = { writerKey: () => log.writerKey(), commitDigest: async () => 'f'.repeat(64) };
    const { start } = await startAfter(keeper({ log: elsewhere }));
    expect(start?.snapshot).toBe(false);
    expect(start?.reason).toMatch(/is ignored: the log differs at seq \d+ \(its commit is [0-9a-f]{12}, the snapshot was taken at ffffffffffff\)/);
  });
});
