import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { JetStreamEventLog } from '../../src/adapters/eventlog/jetstream-log.js';
import { LogWriter } from '../../src/adapters/eventlog/log-writer.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { MeshView } from '../../src/controller/mesh-view.js';
import { MeshWriter } from '../../src/controller/mesh-writer.js';
import { nodeNamed } from '../../src/domain/nodes/state.js';
import { decideMeshCommand } from '../../src/domain/mesh/commands.js';
import type { Decision } from '../../src/domain/decision.js';
import { meshEventRegistry, type MeshEvent, type StoredMeshEvent } from '../../src/domain/registry.js';
import { Refusal } from '../../src/domain/refusal.js';
import { emptyMeshState, evolveMesh } from '../../src/domain/mesh/state.js';
import { commandCarriedOut, RECENT_COMMANDS, recordCommand } from '../../src/domain/mesh/command-index.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';

// The controller's one writer against the real server: commands sent at once are decided in order
// against the view and their appends pipelined, each landing exactly once; an invariant between
// them holds; and a commit another process lands in between costs the commands in flight one
// decision again, never a lost or doubled command.

describe('the mesh writer', () => {
  let t: TestMesh;
  let view: MeshView;
  let service: MeshService;
  const warnings: string[] = [];

  beforeAll(async () => {
    t = await openTestMesh();
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
    view = new MeshView(t.newLog(), { logger });
    view.start();
    const log = t.newLog();
    service = new MeshService(log, {}, view, new MeshWriter(log, view, { logger }));
  });
  afterAll(async () => {
    await view.stop();
    await t.close();
  });

  const commitsOf = async (fromSeq: number): Promise<StoredMeshEvent[]> => {
    const events: StoredMeshEvent[] = [];
    for await (const event of t.newLog().read({ fromSeq })) events.push(event);
    return events;
  };

  const refold = async (): Promise<ReturnType<typeof emptyMeshState>> => {
    const state = emptyMeshState();
    for await (const event of t.newLog().read()) evolveMesh(state, event);
    return state;
  };

  it('carries out 300 commands sent at once, each once, in consecutive commits, with the view equal to a fold of the log', async () => {
    const from = (await t.log.headSeq()) + 1;
    const names = Array.from({ length: 300 }, () => uniqueName('n'));
    const results = await Promise.all(names.map((node) => service.execute({ type: 'add-node', node }, { commandId: uniqueName('c'), actor: 'operator:test' })));
    expect(results.every((r) => r.events.length === 1 && !r.duplicate)).toBe(true);
    const appended = await commitsOf(from);
    expect(appended).toHaveLength(300);
    expect(new Set(appended.map((e) => e.seq)).size).toBe(300);
    expect(appended.at(-1)!.seq - appended[0]!.seq).toBe(299);
    await view.reached(appended.at(-1)!.seq);
    const fold = await refold();
    for (const node of names) expect(nodeNamed(view.mesh().nodes, node)).toBeDefined();
    expect(view.mesh().seq).toBe(fold.seq);
    expect([...view.mesh().versions]).toEqual([...fold.versions]);
    expect(warnings.filter((w) => w.includes('folding the log again'))).toEqual([]);
  });

  it('holds an invariant between commands sent at once: one node name, twenty commands, one node added', async () => {
    const node = uniqueName('same');
    const outcomes = await Promise.allSettled(Array.from({ length: 20 }, () => service.execute({ type: 'add-node', node }, { commandId: uniqueName('c'), actor: 'operator:test' })));
    const carried = outcomes.filter((o) => o.status === 'fulfilled' && o.value.events.length > 0);
    const refusedOrNothing = outcomes.filter((o) => (o.status === 'rejected' && o.reason instanceof Refusal) || (o.status === 'fulfilled' && o.value.events.length === 0));
    expect(carried).toHaveLength(1);
    expect(refusedOrNothing).toHaveLength(19);
  });

  it('states facts beside commands in one order: each decided once, none making another decide again', async () => {
    const from = (await t.log.headSeq()) + 1;
    let decisions = 0;
    const counted = (decide: (state: ReturnType<typeof emptyMeshState>) => Decision) => (state: ReturnType<typeof emptyMeshState>): Decision => {
      decisions++;
      return decide(state);
    };
    const commands = Array.from({ length: 100 }, () => uniqueName('n')).map((node) =>
      service.appendDecided({ subject: `add ${node}`, decide: counted((state) => decideMeshCommand({ type: 'add-node', node }, state)), metadata: { commandId: uniqueName('c'), actor: 'operator:test' } }),
    );
    // What the controller states on its own (here, a refusal per node), as reports' facts are: through the same writer.
    const facts = Array.from({ length: 100 }, () => uniqueName('r')).map((node) =>
      service.appendDecided({
        subject: `refusal of ${node}`,
        decide: counted(() => ({
          aggregate: `node.${node}`,
          events: [{ type: 'declaration.refused', data: { node, derivedFromSeq: 1, reason: `sha256:${'0'.repeat(64)}`, unresolved: [{ what: 'bus', why: 'none', remedy: 'assign one' }] } }],
          summary: `refusal of ${node}`,
        })),
        metadata: { commandId: uniqueName('f'), actor: 'controller' },
      }),
    );
    const results = await Promise.all([...commands, ...facts]);
    expect(results.every((r) => r.events.length === 1 && !r.duplicate)).toBe(true);
    expect(decisions).toBe(200);
    const appended = await commitsOf(from);
    expect(appended).toHaveLength(200);
    expect(appended.at(-1)!.seq - appended[0]!.seq).toBe(199);
    expect(warnings.filter((w) => w.includes('folding the log again'))).toEqual([]);
  });

  it('answers ten sends of one command id with one commit and nine duplicates', async () => {
    const commandId = uniqueName('same-id');
    const node = uniqueName('n');
    const results = await Promise.all(Array.from({ length: 10 }, () => service.execute({ type: 'add-node', node }, { commandId, actor: 'operator:test' })));
    expect(results.filter((r) => !r.duplicate && r.events.length === 1)).toHaveLength(1);
    expect(results.filter((r) => r.duplicate)).toHaveLength(9);
    const all = await commitsOf(1);
    expect(all.filter((e) => e.commandId === commandId)).toHaveLength(1);
  });

  it('answers a command retried long after, when the fold keeps only "perhaps" of it, from the log: once, and never refuses a new one the filter mistakes', async () => {
    const early = { node: uniqueName('early'), commandId: uniqueName('c') };
    const first = await service.execute({ type: 'add-node', node: early.node }, { commandId: early.commandId, actor: 'operator:test' });
    expect(first.events).toHaveLength(1);
    // As though twenty thousand commands had come since: the early one is only in the filter now.
    const index = view.mesh().commands;
    for (let i = 0; i < RECENT_COMMANDS; i++) recordCommand(index, `since-${early.commandId}-${i}`, { seq: first.seq, aggregate: 'node.since' });
    // And one the log never held, put in the filter as a mistaken "perhaps" would be.
    const mistaken = { node: uniqueName('new'), commandId: uniqueName('c') };
    recordCommand(index, mistaken.commandId, { seq: first.seq, aggregate: 'node.elsewhere' });
    for (let i = 0; i < RECENT_COMMANDS; i++) recordCommand(index, `more-${early.commandId}-${i}`, { seq: first.seq, aggregate: 'node.since' });
    expect(commandCarriedOut(index, early.commandId)).toBe('perhaps');
    expect(commandCarriedOut(index, mistaken.commandId)).toBe('perhaps');

    const retried = await service.execute({ type: 'add-node', node: early.node }, { commandId: early.commandId, actor: 'operator:test' });
    expect(retried).toMatchObject({ duplicate: true, seq: first.seq, events: [] });
    const fresh = await service.execute({ type: 'add-node', node: mistaken.node }, { commandId: mistaken.commandId, actor: 'operator:test' });
    expect(fresh.duplicate).toBe(false);
    expect(fresh.events).toHaveLength(1);
    const all = await commitsOf(1);
    expect(all.filter((e) => e.commandId === early.commandId)).toHaveLength(1);
    expect(all.filter((e) => e.commandId === mistaken.commandId)).toHaveLength(1);
  });

  it('decides the commands in flight again when another process lands a commit among them: none lost, none doubled', async () => {
    // Another process with the controller's key, appending on its own: what a second controller would be.
    const other = new JetStreamEventLog<MeshEvent>(t.nc, { stream: t.names.logStream, subjectPrefix: t.names.logPrefix, registry: meshEventRegistry(), writer: new LogWriter(t.nc, { stream: t.names.logStream, key: t.controllerKey }) });
    const theirs = Array.from({ length: 3 }, () => ({ node: uniqueName('x'), commandId: uniqueName('c') }));
    // Our 40th commit goes out only after the other process has landed its three: it and every one issued after it meet a log that moved.
    let publishes = 0;
    const ourWriter = new LogWriter(t.nc, {
      stream: t.names.logStream,
      key: t.controllerKey,
      publish: async (js, subject, payload, options) => {
        if (++publishes === 40) {
          for (const { node, commandId } of theirs) {
            const decision = decideMeshCommand({ type: 'add-node', node }, emptyMeshState());
            await other.append(decision.aggregate, decision.events, 0, { commandId, actor: 'operator:other' });
          }
        }
        return js.publish(subject, payload, options);
      },
    });
    const ours = new JetStreamEventLog<MeshEvent>(t.nc, { stream: t.names.logStream, subjectPrefix: t.names.logPrefix, registry: meshEventRegistry(), writer: ourWriter });
    const ourView = new MeshView(t.newLog(), { logger: pino({ level: 'silent' }) });
    ourView.start();
    const lines: string[] = [];
    const ourService = new MeshService(ours, {}, ourView, new MeshWriter(ours, ourView, { logger: pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) }) }));
    try {
      const from = (await t.log.headSeq()) + 1;
      const commands = Array.from({ length: 200 }, () => ({ node: uniqueName('o'), commandId: uniqueName('c') }));
      const results = await Promise.all(commands.map(({ node, commandId }) => ourService.execute({ type: 'add-node', node }, { commandId, actor: 'operator:test' })));
      expect(results.every((r) => r.events.length === 1 && !r.duplicate)).toBe(true);
      expect(lines.some((line) => line.includes('folding the log again'))).toBe(true);
      const appended = await commitsOf(from);
      for (const { commandId } of [...commands, ...theirs]) expect(appended.filter((e) => e.commandId === commandId)).toHaveLength(1);
      expect(appended).toHaveLength(203);
      await ourView.reached(appended.at(-1)!.seq);
      const fold = await refold();
      expect(ourView.mesh().seq).toBe(fold.seq);
      expect([...ourView.mesh().nodes.byName.keys()].sort()).toEqual([...fold.nodes.byName.keys()].sort());
      expect([...ourView.mesh().versions]).toEqual([...fold.versions]);
      // And the writer goes on after it.
      const after = await ourService.execute({ type: 'add-node', node: uniqueName('after') }, { commandId: uniqueName('c'), actor: 'operator:test' });
      expect(after.events).toHaveLength(1);
    } finally {
      await ourView.stop();
    }
  });
});
