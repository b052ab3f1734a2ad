import { afterAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { passwordFileName } from '../../src/adapters/database-logins.js';
import { Agent } from '../../src/agent/agent.js';
import { stopRecordedProcesses } from '../../src/agent/left-running.js';
import type { ProcessRecord } from '../../src/agent/records.js';
import { StateFolder } from '../../src/agent/state-folder.js';
import { meshHome } from '../../src/config.js';
import { freePort } from '../../src/dev/ports.js';
import { databaseUrl, startPostgres, stopPostgres } from '../../src/dev/postgres.js';
import { isAlive } from '../../src/dev/processes.js';
import type { Report } from '../../src/domain/reports/report.js';
import { FAST } from '../agent/harness.js';
import { openControllersMesh, type ControllerProcess } from '../helpers/controller-processes.js';
import { cutProxy } from '../helpers/cut-proxy.js';
import { cleanupsAfter, faultCount, p50AndMax, report, sleep } from '../helpers/faults.js';
import { uniqueName } from '../helpers/names.js';
import { scratchNats } from '../helpers/scratch-nats.js';
import { waitFor } from '../helpers/test-mesh.js';

// The whole control plane taken away at once while agents run: the nats-server killed (SIGKILL),
// both controller processes (the writer and a standby) killed, PostgreSQL stopped as by a crash — a server, controllers and
// PostgreSQL of the test's own. N real agents (in this process, each its own node and state
// folder) run a module with a directory, a file and a process each; half of them a second module
// with a file. While everything is away, every process must stay the one started and every file
// stay the one written. On the way back (NATS, then a controller with PostgreSQL still away,
// then PostgreSQL) some nodes' declarations change three times — the second module added or
// removed — while the agents still cannot reach the bus (their one way to it, a relay of the
// test's own, stays cut), so three declarations pile up for each. Then the agents reconnect: each
// must accept exactly its node's newest declaration and nothing in between, a node whose
// declaration did not change must do nothing at all (same pids, the same files, no report), and a
// changed node must change only its second module. MESH_FAULT_AGENTS sets how many agents (50 in
// CI: a hundred in one process take 45–65 s on two shared cores; MESH_FAULT_AGENTS=100 is the issue's
// size), MESH_FAULT_DOWN_MS how long everything stays away (5 s by default).

const AGENTS = faultCount('MESH_FAULT_AGENTS', 50);
const DOWN_MS = faultCount('MESH_FAULT_DOWN_MS', 5_000);
const ROUNDS = 3;
const LEASE_MS = 3_000;
const TIMINGS = { ...FAST, resyncMs: 2_000, heartbeatMs: 2_000 };

/** A module with a host directory and a file in it filled from an operator's value; `processes` run beside. */
const moduleOf = (name: string, file: string, value: string, processes: { name: string; run: string[] }[] = []) => ({
  name,
  requires: [
    { name: 'dir', contract: 'directory', provider: 'host' },
    { name: value, contract: 'value', provider: 'operator', type: 'string' },
  ],
  resources: { directories: [{ requirement: 'dir' }], files: [{ name: 'file', in: 'dir', as: file, template: `\${${value}}\n`, mode: '0644' }], processes },
});
const keeper = moduleOf('keeper', 'label.txt', 'label', [{ name: 'server', run: ['sleep', '3600'] }]);
const notes = moduleOf('notes', 'note.txt', 'text');

/** What the agent's log says it did, as it said it. */
interface Said {
  at: number;
  msg: string;
  sequence?: number;
  key?: string;
  pid?: number;
}

interface Node {
  name: string;
  root: string;
  stateDir: string;
  agent: Agent;
  said: Said[];
  reports: { at: number; report: Report }[];
  /** whether its declaration changes on the way back */
  changes: boolean;
  /** whether the notes module is assigned to it now */
  hasNotes: boolean;
}

/** What makes a file the one written: the same inode and modification time (the agent writes a new file and renames it into place). */
const fileIdentity = (path: string): string | undefined => {
  try {
    const stat = statSync(path);
    return `${stat.ino}:${stat.mtimeMs}`;
  } catch {
    return undefined;
  }
};

/** What the agent recorded of the keeper's process: the one it started, and how often it restarted it. */
const serverRecord = (stateDir: string): ProcessRecord | undefined => new StateFolder(stateDir).loadRecords().find((r): r is ProcessRecord => r.kind === 'process' && r.key === 'keeper/server');

/** Keeps what the agent says it did (starting, stopping, accepting, its link), with when. */
const noteSaid = (said: Said[], line: string): void => {
  const { msg, sequence, key, pid } = JSON.parse(line) as Omit<Said, 'at'>;
  if (IMPORTANT.has(msg)) said.push({ at: Date.now(), msg, ...(sequence === undefined ? {} : { sequence }), ...(key === undefined ? {} : { key }), ...(pid === undefined ? {} : { pid }) });
};

const IMPORTANT = new Set(['declaration accepted', 'declaration refused', 'started a process', 'stopped an undeclared process', 'disconnected from NATS; everything keeps running', 'reconnected to NATS']);

describe('the whole control plane down while agents run', () => {
  const cleanup = cleanupsAfter(afterAll);

  it('keeps every workload running; afterwards each agent takes exactly its newest declaration and restarts nothing that did not change', async () => {
    const started = Date.now();
    // The nodes' folders and the agents' state in memory where the machine has a tmpfs: a hundred
    // agents in one process would otherwise wait on one another's fsyncs, which nodes on disks of
    // their own never do.
    const root = join(existsSync('/dev/shm') ? '/dev/shm' : join(meshHome(), 'tmp'), uniqueName('control-plane-down-'));
    mkdirSync(root, { recursive: true });
    cleanup(async () => rmSync(root, { recursive: true, force: true }));

    // PostgreSQL of the test's own. Not under .mesh/tmp: key folders made there first leave it 0700, and the postgres user must reach its data.
    const pgDir = join(meshHome(), 'scratch-postgres', uniqueName('control-plane-down-'));
    mkdirSync(pgDir, { recursive: true, mode: 0o755 });
    const postgres = { dir: pgDir, port: await freePort(), secretsDir: join(pgDir, 'secrets') };
    cleanup(async () => {
      await stopPostgres(postgres, 'immediate').catch(() => undefined);
      rmSync(pgDir, { recursive: true, force: true });
    });
    // PostgreSQL starts (a cluster made the first time) while the bus and the mesh are set up.
    const pgStarted = startPostgres(postgres);
    const nats = await scratchNats('control-plane-down');
    cleanup(() => nats.remove());
    const mesh = await openControllersMesh({
      leaseMs: LEASE_MS,
      url: nats.url,
      env: {
        MESH_DATABASE_URL: databaseUrl(postgres.port),
        ...Object.fromEntries((['projector', 'controller', 'reader'] as const).map((role) => [`MESH_PG_PASSWORD_FILE_${role.toUpperCase()}`, join(postgres.secretsDir, passwordFileName(role))])),
      },
    });
    cleanup(() => mesh.close());
    const { t } = mesh;
    const startControllers = async (count: number): Promise<ControllerProcess[]> => {
      const started = await Promise.all(Array.from({ length: count }, () => mesh.start()));
      await waitFor('a controller serving as the writer', async () => started.some((c) => c.servingSince() !== undefined), 60_000);
      return started;
    };

    // The mesh as an operator set it up: two modules, N nodes, each running keeper, the odd ones notes too.
    await t.run({ type: 'register-module', manifest: keeper });
    await t.run({ type: 'register-module', manifest: notes });
    const nodes: Node[] = [];
    for (let i = 0; i < AGENTS; i++) {
      const name = `node-${String(i).padStart(3, '0')}`;
      const node: Node = { name, root: join(root, 'nodes', name), stateDir: join(root, 'agents', name), agent: undefined as unknown as Agent, said: [], reports: [], changes: i % 5 === 0, hasNotes: i % 2 === 1 };
      nodes.push(node);
      await t.run({ type: 'add-node', node: name, root: node.root, address: '127.0.0.1' });
      await t.run({ type: 'assign', module: 'keeper', node: name, hold: [], pins: {}, values: { label: `keeper of ${name}` }, placements: {} });
      if (node.hasNotes) await t.run({ type: 'assign', module: 'notes', node: name, hold: [], pins: {}, values: { text: `first note of ${name}` }, placements: {} });
    }
    await pgStarted;
    let controllers = await startControllers(2);
    cleanup(async () => {
      for (const c of controllers) c.child.kill('SIGKILL');
    });

    // The agents reach the bus only through a relay, so that they can be kept away from it after it is back.
    const relay = await cutProxy(nats.url);
    cleanup(() => relay.close());
    cleanup(async () => {
      for (const node of nodes) {
        await node.agent?.stop().catch(() => undefined);
        stopRecordedProcesses(node.stateDir, 'SIGKILL');
      }
    });
    const agentsAt = Date.now();
    await Promise.all(
      nodes.map(async (node) => {
        const wire = { prefix: t.names.prefix, nodesStream: t.names.nodesStream };
        node.agent = new Agent({
          node: node.name,
          natsUrl: relay.url,
          stateDir: node.stateDir,
          controllerKey: t.controllerKey.publicKey,
          wire,
          timings: TIMINGS,
          logger: pino({ level: 'info' }, { write: (line: string) => noteSaid(node.said, line) }),
          onReport: (r) => void node.reports.push({ at: Date.now(), report: r }),
        });
        await node.agent.start();
      }),
    );
    const declared = async (node: Node): Promise<number> => (await t.declarationOf(node.name))?.sequence ?? 0;
    const before = new Map<string, number>();
    for (const node of nodes) before.set(node.name, await waitFor(`${node.name} declared`, async () => declared(node), 60_000));
    const everyApplied = (node: Node, sequence: number): boolean => {
      const last = node.agent.status().lastReport;
      return last?.sequence === sequence && last.resources.length > 0 && last.resources.every((r) => r.outcome === 'applied');
    };
    await waitFor('every agent applied its declaration', async () => nodes.every((n) => everyApplied(n, before.get(n.name) as number)), 90_000);
    // The controller has taken every report so far: what it takes after the outage is what the agents said since.
    const controlEmpty = async (): Promise<boolean> => (await t.jsm.streams.info(t.names.controlStream)).state.messages === 0;
    await waitFor('the reports before the outage taken', controlEmpty, 60_000);
    const setUpMs = Date.now() - started;
    const appliedMs = Date.now() - agentsAt;

    // What runs and what is written before the outage.
    const paths = (node: Node) => ({ label: join(node.root, 'keeper', 'dir', 'label.txt'), note: join(node.root, 'notes', 'dir', 'note.txt') });
    const baseline = new Map(
      nodes.map((node) => {
        const record = serverRecord(node.stateDir);
        const pid = record?.running?.pid;
        if (pid === undefined || !isAlive(pid)) throw new Error(`${node.name}: keeper/server is not running`);
        return [node.name, { pid, startTicks: record?.running?.startTicks, label: fileIdentity(paths(node).label), note: fileIdentity(paths(node).note), passes: 0 }] as const;
      }),
    );
    for (const node of nodes) expect(existsSync(paths(node).note)).toBe(node.hasNotes);

    // Everything away at once: the agents' link, the controllers, NATS, PostgreSQL.
    const downAt = Date.now();
    await relay.cut();
    for (const c of controllers) c.child.kill('SIGKILL');
    await Promise.all([nats.kill(), stopPostgres(postgres, 'immediate'), ...controllers.map((c) => c.exited)]);
    await waitFor('every agent to notice', async () => nodes.every((n) => !n.agent.status().connected), 30_000);
    for (const node of nodes) (baseline.get(node.name) as { passes: number }).passes = node.agent.status().passes;
    // While away: every process the one started, sampled throughout.
    const stoppedWhileDown: string[] = [];
    let samples = 0;
    while (Date.now() - downAt < DOWN_MS) {
      samples++;
      for (const node of nodes) if (!isAlive(baseline.get(node.name)?.pid as number)) stoppedWhileDown.push(`${node.name} at ${Date.now() - downAt} ms`);
      await sleep(250);
    }
    const passesWhileDown = nodes.map((n) => n.agent.status().passes - (baseline.get(n.name)?.passes as number));
    const filesWhileDown = nodes.filter((n) => fileIdentity(paths(n).label) !== baseline.get(n.name)?.label || fileIdentity(paths(n).note) !== baseline.get(n.name)?.note).map((n) => n.name);
    const connectedWhileDown = nodes.filter((n) => n.agent.status().connected).length;

    // The way back, the agents still cut off: NATS, then a controller with PostgreSQL still away, then PostgreSQL.
    const backAt = Date.now();
    await nats.restart();
    controllers = await startControllers(1);
    const controllersBackMs = Date.now() - backAt;
    const changed = nodes.filter((n) => n.changes);
    const toggle = async (node: Node, round: number): Promise<void> => {
      const command = node.hasNotes ? { type: 'unassign', module: 'notes', node: node.name } : { type: 'assign', module: 'notes', node: node.name, hold: [], pins: {}, values: { text: `note of round ${round} on ${node.name}` }, placements: {} };
      const answer = await mesh.send(uniqueName('c'), command);
      if (!answer.ok) throw new Error(`${command.type} on ${node.name} refused: ${JSON.stringify(answer)}`);
      node.hasNotes = !node.hasNotes;
    };
    for (let round = 1; round <= ROUNDS; round++) {
      if (round === ROUNDS) await startPostgres(postgres);
      await Promise.all(changed.map((node) => toggle(node, round)));
      // One declaration per round: each round's is in NODES before the next round's command is sent.
      await waitFor(`round ${round} declared`, async () => {
        const sequences = await Promise.all(changed.map(declared));
        return changed.every((n, i) => (sequences[i] as number) >= (before.get(n.name) as number) + round);
      });
    }
    const newest = new Map<string, number>();
    for (const node of nodes) newest.set(node.name, await declared(node));
    const republished = nodes.filter((n) => !n.changes && newest.get(n.name) !== before.get(n.name)).map((n) => n.name);
    const piledUp = changed.map((n) => (newest.get(n.name) as number) - (before.get(n.name) as number));

    // The agents reconnect.
    const restoredAt = Date.now();
    await relay.restore();
    const caughtUpAt = new Map<string, number>();
    await waitFor(
      'every agent reconnected and on its newest declaration',
      async () => {
        for (const node of nodes) {
          if (caughtUpAt.has(node.name)) continue;
          const status = node.agent.status();
          if (status.connected && status.sequence === newest.get(node.name) && everyApplied(node, newest.get(node.name) as number)) caughtUpAt.set(node.name, Date.now());
        }
        return caughtUpAt.size === nodes.length;
      },
      60_000,
    );
    const caughtUp = p50AndMax(changed.map((n) => (caughtUpAt.get(n.name) as number) - restoredAt));
    // Every report the agents made reached the controller and was taken.
    await waitFor('every report since taken by the controller', controlEmpty, 60_000);
    // A reconcile pass more for anything late to show.
    await sleep(TIMINGS.resyncMs);

    const problems: string[] = [];
    let unchangedTouched = 0;
    let changedTouched = 0;
    for (const node of nodes) {
      const was = baseline.get(node.name) as NonNullable<ReturnType<typeof baseline.get>>;
      const since = node.said.filter((s) => s.at >= downAt);
      const accepted = since.filter((s) => s.msg === 'declaration accepted').map((s) => s.sequence);
      const refused = since.filter((s) => s.msg === 'declaration refused');
      const processes = since.filter((s) => s.msg === 'started a process' || s.msg === 'stopped an undeclared process');
      const reportsSince = node.reports.filter((r) => r.at >= downAt).map((r) => r.report);
      const record = serverRecord(node.stateDir);
      const pid = record?.running?.pid;
      const wanted = newest.get(node.name) as number;
      const say = (what: string) => problems.push(`${node.name}${node.changes ? ' (changed)' : ''}: ${what}`);
      if (pid !== was.pid || record?.running?.startTicks !== was.startTicks || !isAlive(was.pid)) say(`keeper/server was pid ${was.pid}, now ${pid} (${isAlive(was.pid) ? 'the first alive' : 'the first gone'})`);
      if ((record?.restarts ?? 0) !== 0) say(`keeper/server restarts ${record?.restarts}`);
      if (processes.length > 0) say(processes.map((p) => `${p.msg} ${p.key}`).join(', '));
      if (fileIdentity(paths(node).label) !== was.label) say('label.txt written again');
      if (refused.length > 0) say(`${refused.length} declarations refused`);
      if (reportsSince.some((r) => r.refusal !== null || r.sequence !== wanted)) say(`reported ${reportsSince.map((r) => r.sequence).join(' ')}`);
      if (node.agent.status().sequence !== wanted) say(`on sequence ${node.agent.status().sequence}, not ${wanted}`);
      const note = paths(node).note;
      if (node.changes) {
        if (accepted.length !== 1 || accepted[0] !== wanted) say(`accepted ${accepted.join(' ') || 'nothing'} after the outage; ${wanted} is its newest`);
        if (node.hasNotes !== existsSync(note)) say(`note.txt ${existsSync(note) ? 'present' : 'missing'}`);
        if (node.hasNotes && readFileSync(note, 'utf8') !== `note of round ${ROUNDS} on ${node.name}\n`) say(`note.txt says ${readFileSync(note, 'utf8')}`);
        if (accepted.length !== 1 || processes.length > 0) changedTouched++;
      } else {
        if (accepted.length > 0) say(`accepted ${accepted.join(' ')} though nothing changed`);
        if (reportsSince.length > 0) say(`${reportsSince.length} reports though nothing changed`);
        if (fileIdentity(note) !== was.note) say('note.txt written again or removed');
        if (accepted.length > 0 || processes.length > 0 || reportsSince.length > 0) unchangedTouched++;
      }
    }
    const reconnects = nodes.reduce((n, node) => n + node.said.filter((s) => s.at >= restoredAt && s.msg === 'reconnected to NATS').length, 0);
    const neverReconnected = nodes.filter((node) => !node.said.some((s) => s.at >= restoredAt && s.msg === 'reconnected to NATS')).map((n) => n.name);
    report('the whole control plane down while agents run', {
      did: `${AGENTS} agents (a process and a file each, half a second file); NATS and both controllers (writer and standby) killed (SIGKILL) and PostgreSQL stopped (immediate) for ${DOWN_MS} ms; on the way back ${changed.length} nodes' declarations changed ${ROUNDS} times (notes added or removed: ${ROUNDS - 1} rounds with PostgreSQL still away) while the agents were kept from the bus; then they reconnected`,
      'set up': `${(setUpMs / 1000).toFixed(1)} s, of which ${(appliedMs / 1000).toFixed(1)} s the ${AGENTS} agents starting and applying`,
      'while down': `${samples} samples, ${stoppedWhileDown.length} processes gone${stoppedWhileDown.length ? `: ${stoppedWhileDown.slice(0, 5).join(', ')}` : ''}; ${filesWhileDown.length} files changed; ${connectedWhileDown} agents connected; reconcile passes per agent ${Math.min(...passesWhileDown)}–${Math.max(...passesWhileDown)}`,
      'way back': `a controller serving ${controllersBackMs} ms after NATS was started again; declarations piled up per changed node: ${[...new Set(piledUp)].join('/')}; unchanged nodes given a new declaration: ${republished.length}`,
      reconnected: `${AGENTS - neverReconnected.length} agents said so (${reconnects} reconnections); the changed caught up p50 ${caughtUp.p50} ms, max ${caughtUp.max} ms after the relay was restored`,
      found: `${unchangedTouched} of ${AGENTS - changed.length} unchanged nodes did anything (accepted, reported, started or stopped); ${changedTouched} of ${changed.length} changed nodes accepted other than exactly their newest or touched a process; ${problems.length} problems${problems.length ? `: ${problems.slice(0, 10).join('; ')}` : ''}`,
    });

    expect(stoppedWhileDown).toEqual([]);
    expect(filesWhileDown).toEqual([]);
    expect(connectedWhileDown).toBe(0);
    expect(Math.min(...passesWhileDown)).toBeGreaterThan(0);
    expect(republished).toEqual([]);
    expect(piledUp.every((n) => n === ROUNDS)).toBe(true);
    expect(neverReconnected).toEqual([]);
    expect(problems).toEqual([]);
  });
});
