import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { createOperatorKey } from '../../src/adapters/operator-keys.js';
import { meshHome } from '../../src/config.js';
import { CommandDispatcher } from '../../src/controller/command-dispatcher.js';
import { ToolServer } from '../../src/controller/tool-server.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connectNats } from '../../src/adapters/nats/connect.js';
import { JetStreamEventLog } from '../../src/adapters/eventlog/jetstream-log.js';
import { LogWriter } from '../../src/adapters/eventlog/log-writer.js';
import { newIdentity } from '../../src/adapters/identity.js';
import { bootstrapControlPlane } from '../../src/controller/bootstrap.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { meshEventRegistry, type MeshEvent } from '../../src/domain/registry.js';
import { isAssigned } from '../../src/domain/assignments/state.js';
import { holderOf } from '../../src/domain/seats/state.js';
import type { MeshError } from '../../src/errors.js';
import { runMesh } from '../helpers/cli.js';
import { FIXTURE_MODULES } from '../helpers/given.js';
import { testNatsUrl } from '../helpers/log.js';
import type pg from 'pg';
import { meshProjections } from '../../src/projections/catalogue.js';
import { Projector } from '../../src/projections/projector.js';
import { dropSchemas, FAST, freshSchemas, openPool, testDatabaseUrl } from '../projections/harness.js';
import { uniqueName } from '../helpers/names.js';

// The operator's verbs against the real servers: each `mesh` call is its own process, reading
// the log and sending signed commands to the controller's tools, which decide them.

describe('the catalogue, seats and assignments through the CLI', () => {
  const name = uniqueName('m');
  const stream = `LOG_${name}`;
  const prefix = `${name}.log`;
  const keyFile = join(meshHome(), 'tmp', uniqueName('ada-'), 'operator.key');
  // Reads query the projections: a projector of this test's own folds its log into schemas of its own.
  const schemas = freshSchemas();
  const env = { MESH_LOG_STREAM: stream, MESH_LOG_SUBJECT_PREFIX: prefix, MESH_SUBJECT_PREFIX: name, MESH_OPERATOR_KEY: keyFile, MESH_PROJECTOR_SCHEMA: schemas.control, MESH_READ_SCHEMA: schemas.read };
  const mesh = (...args: string[]) => runMesh(args, env);
  let nc: NatsConnection;
  let log: JetStreamEventLog<MeshEvent>;
  const tools: ToolServer[] = [];
  let projector: Projector<MeshEvent>;
  let pool: pg.Pool;

  // The controller's key; each log gets a writer of its own, as each controller process has.
  const key = newIdentity();
  const controllerLog = (): JetStreamEventLog<MeshEvent> => new JetStreamEventLog(nc, { stream, subjectPrefix: prefix, registry: meshEventRegistry(), writer: new LogWriter(nc, { stream, key }) });
  const head = async (): Promise<number> => (await (await jetstreamManager(nc)).streams.info(stream)).state.last_seq;
  const typesSince = async (seq: number): Promise<string[]> => {
    const types: string[] = [];
    for await (const event of log.read({ fromSeq: seq + 1 })) types.push(event.type);
    return types;
  };

  beforeAll(async () => {
    nc = await connectNats(testNatsUrl(), { name: 'test-mesh-cli' });
    log = controllerLog();
    await bootstrapControlPlane(nc, log, { stream, subjectPrefix: prefix, meshName: name, actor: 'test', controllerKey: key.publicKey });
    const ada = createOperatorKey(keyFile, 'ada');
    await new MeshService(log).execute({ type: 'add-operator', operator: 'ada', publicKey: ada.publicKey }, { commandId: uniqueName('genesis'), actor: 'genesis' });
    // Two controllers serve the tools, as two controller processes would.
    for (let i = 0; i < 2; i++) {
      const server = new ToolServer(nc, new CommandDispatcher(new MeshService(controllerLog())), { prefix: name, logger: pino({ level: 'silent' }) });
      server.start();
      tools.push(server);
    }
    pool = openPool();
    projector = new Projector({
      databaseUrl: testDatabaseUrl(),
      nc,
      log: { stream, subjectPrefix: prefix, registry: meshEventRegistry() },
      projections: meshProjections(),
      schemas,
      settings: FAST,
    });
    await projector.start();
  });
  afterAll(async () => {
    await projector.stop();
    await dropSchemas(pool, schemas);
    await pool.end();
    for (const server of tools) server.stop();
    rmSync(dirname(keyFile), { recursive: true, force: true });
    await (await jetstreamManager(nc)).streams.delete(stream).catch(() => undefined);
    await nc.close();
  });

  it('registers the whole fixture catalogue and lists every seat, unheld as an answer', async () => {
    // One call registers many manifests, each its own command.
    const result = await mesh('module', 'register', ...FIXTURE_MODULES.map((module) => `fixtures/modules/${module}.json`));
    expect(result.stderr).toBe('');
    for (const module of FIXTURE_MODULES) expect(result.stdout).toContain(`${module} registered as definition version 1`);
    const seats = await mesh('seats', '--json');
    expect(seats.code).toBe(0);
    const rows = (JSON.parse(seats.stdout) as { seats: { seat: string; holder: unknown; definer: string }[] }).seats;
    expect(rows.map((r) => r.seat).sort()).toEqual(
      [
        'mesh-artifact-store', 'mesh-broker', 'mesh-build-machine', 'mesh-catalog', 'mesh-controller', 'mesh-git', 'mesh-npm-package-registry', 'mesh-private-network',
        'mesh-proxy', 'mesh-store', 'mesh-vault', 'node-dns-resolver', 'node-intrusion-prevention', 'node-packet-filter', 'node-resolver-config', 'node-uplink', 'showcase', 'telegram-sender',
      ].sort(),
    );
    expect(rows.every((r) => r.holder === null)).toBe(true);
    expect(rows.find((r) => r.seat === 'telegram-sender')?.definer).toBe('telegram-sender');
    const human = await mesh('seats');
    expect(human.stdout).toMatch(/^mesh-git\s+mesh\s+git\s+mesh\s+unheld$/m);
  });

  it('refuses a bad manifest with every problem at once, exits non-zero, and appends nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mesh-manifest-'));
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ name: 'bad', colour: 'red', emits: ['module.bad.started'], seats: [{ name: 'mesh-bad', scope: 'mesh' }], provides: [{ provision: 'amqp' }] }));
    const before = await head();
    const result = await mesh('module', 'register', file, '--json');
    expect(result.code).toBe(3);
    const body = JSON.parse(result.stdout) as { ok: boolean; refused: { what: string; why: string; remedy: string }[] };
    expect(body.ok).toBe(false);
    expect(body.refused.map((r) => r.what).sort()).toEqual(['colour', 'emits', 'emits.0', 'provides.0', 'seats', 'seats.0.name'].sort());
    for (const problem of body.refused) expect(problem.remedy.length).toBeGreaterThan(0);
    expect(await head()).toBe(before);

    const human = await mesh('module', 'register', file);
    expect(human.code).toBe(3);
    expect(human.stderr).toContain('registering module bad refused:');
    expect(human.stderr).toContain('colour: unknown field');
  });

  it('adds nodes and assigns the foundation, each refusal naming what would answer', async () => {
    for (const node of ['novox', 'lab1', 'lab2']) expect((await mesh('node', 'add', node)).code).toBe(0);
    expect((await mesh('assign', 'nats', 'novox', '--hold', 'mesh-broker')).code).toBe(0);

    const before = await head();
    const refused = await mesh('assign', 'gitea', 'novox', '--json');
    expect(refused.code).toBe(3);
    expect(JSON.parse(refused.stdout)).toEqual({
      ok: false,
      refused: [{ what: 'requires db (postgres-database)', why: 'no assignment provides postgres-database', remedy: 'assign postgres somewhere first' }],
      error: { code: 'refused' },
    });
    expect(await head()).toBe(before);

    for (const args of [
      ['assign', 'vault', 'novox', '--hold', 'mesh-vault'],
      ['assign', 'postgres', 'novox', '--hold', 'mesh-store'],
      ['assign', 'gitea', 'novox', '--hold', 'mesh-git', '--set', 'public-name=git.novox'],
    ]) {
      const result = await mesh(...args);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
    }
    const seats = JSON.parse((await mesh('seats', '--json')).stdout) as { seats: { seat: string; holder: unknown }[] };
    expect(seats.seats.find((s) => s.seat === 'mesh-git')?.holder).toEqual({ node: 'novox', module: 'gitea' });
    const assigned = (await log.readAggregate('assignment.novox.gitea')).events;
    expect(assigned.map((e) => e.type)).toEqual(['assignment.created', 'seat.held']);
    expect(assigned[0]?.actor).toBe('operator:ada');
  });

  it('answers a retried command with its first outcome and appends nothing', async () => {
    const first = await mesh('node', 'add', 'lab3', '--command-id', `add-lab3-${name}`, '--json');
    expect(first.code).toBe(0);
    const before = await head();
    const retried = await mesh('node', 'add', 'lab3', '--command-id', `add-lab3-${name}`, '--json');
    expect(JSON.parse(retried.stdout)).toMatchObject({ ok: true, duplicate: true, seq: (JSON.parse(first.stdout) as { seq: number }).seq });
    expect(await head()).toBe(before);
  });

  it('lets exactly one of two operators handing one seat over at the same instant win', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mesh-forge-'));
    for (const forge of ['forge-a', 'forge-b']) {
      const file = join(dir, `${forge}.json`);
      writeFileSync(file, JSON.stringify({ name: forge, provides: [{ provision: 'git' }], canHold: ['mesh-git'] }));
      expect((await mesh('module', 'register', file)).code).toBe(0);
      expect((await mesh('assign', forge, 'lab1')).code).toBe(0);
    }
    const before = await head();
    // Both operators looked at `mesh seats` and saw gitea holding mesh-git.
    const [a, b] = await Promise.all([
      mesh('seat', 'handover', 'mesh-git', '--to', 'lab1/forge-a', '--from', 'novox/gitea', '--json'),
      mesh('seat', 'handover', 'mesh-git', '--to', 'lab1/forge-b', '--from', 'novox/gitea', '--json'),
    ]);
    const outcomes = [a, b].map((r) => r.code).sort();
    expect(outcomes).toEqual([0, 3]);
    const loser = [a, b].find((r) => r.code === 3);
    expect((JSON.parse(loser?.stdout ?? '{}') as { refused: { why: string }[] }).refused[0]?.why).toMatch(/held by lab1\/forge-[ab] now, not by novox\/gitea/);
    expect(await typesSince(before)).toEqual(['seat.handed-over']);
  });

  it('renames a seat in one event; the old name still answers', async () => {
    const renamed = await mesh('seat', 'rename', 'mesh-git', 'mesh-forge');
    expect(renamed.code).toBe(0);
    const seats = await mesh('seats');
    expect(seats.stdout).toContain('mesh-forge (was mesh-git)');
    const dir = mkdtempSync(join(tmpdir(), 'mesh-old-name-'));
    const file = join(dir, 'ci.json');
    writeFileSync(file, JSON.stringify({ name: 'ci', requires: [{ name: 'code', contract: 'git', provider: 'module', seat: 'mesh-git' }] }));
    expect((await mesh('module', 'register', file)).code).toBe(0);
    expect((await mesh('assign', 'ci', 'lab2')).code).toBe(0);
  });

  it('releases the seat when its holder is unassigned', async () => {
    const result = await mesh('unassign', 'vault', 'novox', '--json');
    expect(result.code).toBe(0);
    const answer = JSON.parse(result.stdout) as { summary: string; events: { type: string }[] };
    expect(answer.events.map((e) => e.type)).toEqual(['assignment.removed', 'seat.released']);
    // What the operator is told will stop, and what it lets go of.
    expect(answer.summary).toBe('vault unassigned from novox; stops on novox: process vault; released mesh-vault');
    expect((await mesh('seats')).stdout).toMatch(/^mesh-vault\s+mesh\s+secret\s+mesh\s+unheld$/m);
  });

  it('lists a seat held from outside the set instead of hiding it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mesh-pager-'));
    const declares = { name: 'pager', requires: [{ name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' }], seats: [{ name: 'pager', scope: 'mesh' }], canHold: ['pager'] };
    writeFileSync(join(dir, 'v1.json'), JSON.stringify(declares));
    writeFileSync(join(dir, 'v2.json'), JSON.stringify({ ...declares, seats: [], canHold: [] }));
    expect((await mesh('module', 'register', join(dir, 'v1.json'))).code).toBe(0);
    expect((await mesh('assign', 'pager', 'lab2', '--hold', 'pager')).code).toBe(0);
    expect((await mesh('module', 'register', join(dir, 'v2.json'))).stdout).toContain('definition version 2');
    const seats = JSON.parse((await mesh('seats', '--json')).stdout) as { seats: { seat: string }[]; outsideTheSet: { seat: string; holder: unknown }[] };
    expect(seats.seats.map((s) => s.seat)).not.toContain('pager');
    expect(seats.outsideTheSet).toEqual([expect.objectContaining({ seat: 'pager', holder: { node: 'lab2', module: 'pager' } })]);
    expect((await mesh('seats')).stdout).toMatch(/^pager\s+mesh\s+not known\s+outside the set\s+lab2\/pager$/m);
  });

  it('reads nodes, modules and the overview from the projections, waiting for the sequence a command carried', async () => {
    const added = JSON.parse((await mesh('node', 'add', 'lab4', '--root', '/srv/mesh', '--json')).stdout) as { seq: number };
    const list = await mesh('node', 'list', '--json', '--at-least', String(added.seq));
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual(expect.arrayContaining([{ node: 'lab4', root: '/srv/mesh', cordoned: false, modules: [] }, { node: 'novox', root: '/var/lib/mesh', cordoned: false, modules: ['gitea', 'nats', 'postgres'] }]));
    const shown = JSON.parse((await mesh('node', 'show', 'novox', '--json')).stdout) as { assignments: { module: string }[]; seats: { seat: string }[]; enrolled: boolean };
    expect(shown.assignments.map((a) => a.module)).toEqual(['gitea', 'nats', 'postgres']);
    expect(shown.seats.map((h) => h.seat)).toEqual(expect.arrayContaining(['mesh-broker', 'mesh-store']));
    expect(shown.enrolled).toBe(false);
    expect((await mesh('node', 'show', 'nowhere')).code).toBe(5);
    const modules = JSON.parse((await mesh('module', 'list', '--json')).stdout) as { module: string; provides: string[] }[];
    expect(modules.find((m) => m.module === 'nats')?.provides).toEqual(['mesh-bus']);
    expect(JSON.parse((await mesh('module', 'show', 'nats', '--json')).stdout)).toMatchObject({ name: 'nats', definitionVersion: 1 });

    // Nothing is refused or stalled, but no node has enrolled, so none was heard from: the overview
    // says what it does not know, and does not call that health.
    const status = await mesh('status', '--json');
    const overview = JSON.parse(status.stdout) as { ok: boolean; projections: { projection: string; lagCommits: number }[]; unknown: string[]; unheldSeats: string[]; machines: string[] };
    expect(overview.projections.map((p) => p.projection).sort()).toEqual(meshProjections().map((p) => p.name).sort());
    expect(overview.projections.every((p) => p.lagCommits === 0)).toBe(true);
    expect(overview.unknown).toContain('what runs on lab4: no agent has enrolled as it, so nothing reports from it');
    expect(overview.unheldSeats).toContain('mesh-controller');
    expect(overview.machines).toContain('lab4: never heard from');
    expect(overview.ok).toBe(false);
    expect(status.code).toBe(1);

    // A read of a sequence the projections never reach refuses in time, naming how far they are.
    const late = await runMesh(['seats', '--at-least', String(added.seq + 1_000_000)], { ...env, MESH_READ_TIMEOUT_MS: '300' });
    expect(late.code).toBe(6);
    expect(late.stderr).toMatch(/seats is at seq \d+/);
    expect(late.stderr).toContain('npx mesh dev up');
  });

  it('keeps every invariant under many concurrent commands from two controller processes', async () => {
    const services = [new MeshService(controllerLog()), new MeshService(controllerLog())];
    const nodes = Array.from({ length: 4 }, (_, i) => `race${i}`);
    for (const node of nodes) await services[0]?.execute({ type: 'add-node', node }, { commandId: uniqueName('n'), actor: 'test' });
    // 16 attempts to assign audit-logger to 4 nodes and 8 to make each hold mesh-broker's rival seat: all at once.
    const attempts = [
      ...nodes.flatMap((node) => Array.from({ length: 4 }, () => ({ type: 'assign' as const, module: 'audit-logger', node, hold: [], pins: {}, values: {}, placements: {} }))),
      ...nodes.flatMap((node) => Array.from({ length: 2 }, () => ({ type: 'assign' as const, module: 'showcase', node, hold: ['showcase'], pins: {}, values: {}, placements: {} }))),
    ];
    const results = await Promise.allSettled(attempts.map((command, i) => (services[i % 2] as MeshService).execute(command, { commandId: uniqueName('race'), actor: 'test' })));
    const refusedCodes = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as MeshError).code] : []));
    expect(new Set(refusedCodes)).toEqual(new Set(['refused']));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(nodes.length * 2);

    const state = await new MeshService(log).current();
    for (const node of nodes) {
      expect(isAssigned(state.assignments, { node, module: 'audit-logger' })).toBe(true);
      expect(holderOf(state.seats, 'showcase', node)).toEqual({ node, module: 'showcase' });
    }
    const created = [];
    for await (const event of log.read({ aggregate: 'assignment' })) if (event.type === 'assignment.created') created.push(`${(event.data as { node: string }).node}/${(event.data as { module: string }).module}`);
    expect(created.length).toBe(new Set(created).size);
  });
});
