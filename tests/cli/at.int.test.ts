import { beforeAll, describe, expect, it } from '@jest/globals';
import pino from 'pino';
import { foldCodeVersion } from '../../src/adapters/fold-version.js';
import { FoldSnapshotStore } from '../../src/adapters/nats/fold-snapshot-store.js';
import { FoldSnapshots } from '../../src/controller/fold-snapshots.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { cliMeshSuite } from '../helpers/cli-mesh.js';
import { fixtureManifest, minimalModule } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';

// `--at SEQ|TIME` on every read, through the CLI against a real mesh: changes are made, their
// sequences noted, and each read asked about an earlier state answers as the mesh was then,
// saying which sequence it answers for — folded from seq 1, and from a snapshot of the
// controller's fold once one is kept. A sequence beyond the head, a time before the first commit
// and a value that is neither are refused (exit 2).

interface AsOf {
  seq: number;
  time: string;
  from: string;
}

describe('mesh … --at: the mesh as it was at a sequence or a time', () => {
  const names = { web: uniqueName('web'), seat: uniqueName('desk'), one: uniqueName('one'), two: uniqueName('two') };
  const webV = (description: string) => minimalModule(names.web, { description, seats: [{ name: names.seat, scope: 'mesh' }], canHold: [names.seat] });
  const { mesh, manifestFile, t, head } = cliMeshSuite('at', () => []);
  /** the sequence each step was recorded at */
  const seq = { nats: 0, one: 0, broker: 0, web1: 0, two: 0, webOnTwo: 0, web2: 0, cordon: 0, unassigned: 0 };
  let snapshotSeq = 0;

  /** A read with --json: exit 0, one document. */
  const read = async <T>(...args: string[]): Promise<T & { asOf: AsOf }> => {
    const result = await mesh(...args, '--json');
    expect({ args, code: result.code, stderr: result.stderr }).toMatchObject({ args, code: 0 });
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    return JSON.parse(lines[0] as string) as T & { asOf: AsOf };
  };

  const step = async (name: keyof typeof seq, ...args: string[]): Promise<void> => {
    const result = await mesh(...args, '--json');
    expect({ args, code: result.code, stderr: result.stderr }).toMatchObject({ args, code: 0 });
    seq[name] = (JSON.parse(result.stdout.trim()) as { seq: number }).seq;
  };

  /** The controller's snapshot of its fold, kept as the controller keeps it: at the log's head now. */
  const keepSnapshot = async (): Promise<number> => {
    const state = await new MeshService(t().newLog()).current();
    const keeper = new FoldSnapshots({
      store: new FoldSnapshotStore(t().nc, { logStream: t().names.logStream, fold: 'mesh' }),
      log: t().newLog(),
      stream: t().names.logStream,
      codeVersion: foldCodeVersion(),
      signer: t().controllerKey,
      logger: pino({ level: 'silent' }),
    });
    const saved = await keeper.save(state);
    return saved?.seq ?? 0;
  };

  beforeAll(async () => {
    await step('nats', 'module', 'register', manifestFile(fixtureManifest('nats')));
    await step('one', 'node', 'add', names.one);
    await step('broker', 'assign', 'nats', names.one, '--hold', 'mesh-broker');
    await step('web1', 'module', 'register', manifestFile(webV('the first')));
    await step('two', 'node', 'add', names.two);
    await step('webOnTwo', 'assign', names.web, names.two, '--hold', names.seat);
    snapshotSeq = await keepSnapshot();
    await step('web2', 'module', 'register', manifestFile(webV('the second')));
    await step('cordon', 'node', 'cordon', names.two);
    await step('unassigned', 'unassign', names.web, names.two);
  }, 120_000);

  it('seats: who held what then, from seq 1 before the snapshot and from the snapshot after it', async () => {
    const before = await read<{ seats: { seat: string; holder: { node: string; module: string } | null }[] }>('seats', '--at', String(seq.one));
    expect(before.asOf).toMatchObject({ seq: seq.one, from: expect.stringContaining('from seq 1') });
    expect(before.seats.find((s) => s.seat === 'mesh-broker')?.holder).toBeNull();
    const held = await read<{ seats: { seat: string; holder: { node: string; module: string } | null }[] }>('seats', '--at', String(seq.webOnTwo));
    expect(held.seats.find((s) => s.seat === 'mesh-broker')?.holder).toEqual({ node: names.one, module: 'nats' });
    expect(held.seats.find((s) => s.seat === names.seat)?.holder).toEqual({ node: names.two, module: names.web });
    const later = await read<{ seats: { seat: string; holder: unknown }[] }>('seats', '--at', String(seq.cordon));
    expect(later.asOf.from).toBe(`from the snapshot at seq ${snapshotSeq}`);
    expect(later.seats.find((s) => s.seat === names.seat)?.holder).toEqual({ node: names.two, module: names.web });
    // and now, from the projections: unheld since the unassignment
    const now = JSON.parse((await mesh('seats', '--json')).stdout) as { seats: { seat: string; holder: unknown }[] };
    expect(now.seats.find((s) => s.seat === names.seat)?.holder).toBeNull();
  });

  it('the text answer says which sequence it answers for, and when', async () => {
    const result = await mesh('seats', '--at', String(seq.broker));
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n')[0]).toMatch(new RegExp(`^as of sequence ${seq.broker} \\(\\d{4}-\\d{2}-\\d{2}T[\\d:.]+Z\\), folded from seq 1`));
  });

  it('node show: what a node ran then; a node not yet added is not found (exit 5)', async () => {
    const then = await read<{ assignments: { module: string; definitionVersion: number }[]; cordoned: boolean; seats: { seat: string }[] }>('node', 'show', names.two, '--at', String(seq.webOnTwo));
    expect(then.assignments).toEqual([{ module: names.web, definitionVersion: 1 }]);
    expect(then.seats).toEqual([{ seat: names.seat, module: names.web }]);
    expect(then.cordoned).toBe(false);
    const cordoned = await read<{ assignments: unknown[]; cordoned: boolean }>('node', 'show', names.two, '--at', String(seq.cordon));
    expect(cordoned.cordoned).toBe(true);
    expect((await read<{ assignments: unknown[] }>('node', 'show', names.two, '--at', String(seq.unassigned))).assignments).toEqual([]);
    const missing = await mesh('node', 'show', names.two, '--at', String(seq.one));
    expect(missing.code).toBe(5);
    expect(missing.stderr).toContain(`no node ${names.two} in the mesh as of sequence ${seq.one}`);
  });

  it('module show: the definition then; one not yet registered is not found (exit 5)', async () => {
    expect((await read<{ definitionVersion: number; manifest: { description: string } }>('module', 'show', names.web, '--at', String(seq.webOnTwo))).manifest.description).toBe('the first');
    expect((await read<{ definitionVersion: number }>('module', 'show', names.web, '--at', String(seq.web2))).definitionVersion).toBe(2);
    const missing = await mesh('module', 'show', names.web, '--at', String(seq.broker));
    expect(missing.code).toBe(5);
    expect(missing.stderr).toContain(`no module ${names.web} was registered as of sequence ${seq.broker}`);
  });

  it('status: the nodes and what they were told to run then', async () => {
    const then = await read<{ nodes: { node: string; modules: string[]; cordoned: boolean }[]; unheldSeats: string[] }>('status', '--at', String(seq.broker));
    expect(then.asOf.seq).toBe(seq.broker);
    expect(then.nodes).toEqual([{ node: names.one, enrolled: false, cordoned: false, modules: ['nats'] }]);
    expect(then.unheldSeats).not.toContain('mesh-broker');
    const later = await read<{ nodes: { node: string; modules: string[] }[]; unheldSeats: string[] }>('status', '--at', String(seq.webOnTwo));
    expect(later.nodes.find((n) => n.node === names.two)?.modules).toEqual([names.web]);
  });

  it('graph: the modules registered then', async () => {
    const then = await read<{ modules: { module: string }[] }>('graph', '--at', String(seq.nats));
    expect(then.modules.map((m) => m.module)).toEqual(['nats']);
    const later = await read<{ modules: { module: string }[] }>('graph', '--at', String(seq.web1));
    expect(later.modules.map((m) => m.module).sort()).toEqual(['nats', names.web].sort());
    expect((await mesh('graph', names.web, '--at', String(seq.nats))).code).toBe(5);
  });

  it('a time answers for the last commit at or before it', async () => {
    const { events } = (await t().jsm.streams.getMessage(t().names.logStream, { seq: seq.broker }))?.json<{ events: { time: string }[] }>() ?? { events: [] };
    const time = events[0]?.time ?? '';
    const exactly = await read<{ seats: unknown[] }>('seats', '--at', time);
    expect(exactly.asOf.seq).toBe(seq.broker);
    // a moment before the next commit still answers for this one
    const next = (await t().jsm.streams.getMessage(t().names.logStream, { seq: seq.broker + 1 }))?.json<{ events: { time: string }[] }>();
    const justBefore = new Date(new Date(next?.events[0]?.time ?? time).getTime() - 1).toISOString();
    if (justBefore >= time) expect((await read<{ seats: unknown[] }>('seats', '--at', justBefore)).asOf.seq).toBe(seq.broker);
  });

  it('refuses a sequence beyond the head, a time before the first commit, and a value that is neither (exit 2)', async () => {
    const beyond = (await head()) + 1000;
    const tooFar = await mesh('seats', '--at', String(beyond));
    expect({ code: tooFar.code, stderr: tooFar.stderr }).toMatchObject({ code: 2, stderr: expect.stringContaining(`--at ${beyond} is beyond the log's head`) });
    const early = await mesh('node', 'show', names.one, '--at', '2001-01-01T00:00:00Z');
    expect({ code: early.code, stderr: early.stderr }).toMatchObject({ code: 2, stderr: expect.stringContaining("is before the log's first commit") });
    for (const bad of ['yesterday', '0', '-3', '2026-13-45T99:00:00Z']) {
      const refused = await mesh('status', '--at', bad);
      expect({ bad, code: refused.code, stderr: refused.stderr }).toMatchObject({ bad, code: 2, stderr: expect.stringContaining('--at') });
    }
    const both = await mesh('status', '--at', '1', '--wait', '5s');
    expect(both.code).toBe(2);
  });
});
