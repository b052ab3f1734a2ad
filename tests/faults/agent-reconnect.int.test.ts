import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { Agent } from '../../src/agent/agent.js';
import { isAlive } from '../../src/dev/processes.js';
import type { Report } from '../../src/domain/reports/report.js';
import { assignment, directoryResource, FAST, fileResource, openAgentTest, processResource, waitFor, type AgentTest } from '../agent/harness.js';
import { cutProxy, type CutProxy } from '../helpers/cut-proxy.js';
import { faultCount, report, sleep } from '../helpers/faults.js';

// A real agent whose only way to NATS is a relay of the test's own, cut (every connection dropped,
// the port refusing) and restored again and again while the node's declaration changes every few
// hundred milliseconds. What it applies is read from its own log ("declaration accepted") and its
// reports; what it manages is sampled on disk throughout. It must never accept a declaration older
// than one it accepted, never remove a file or stop a process the newest declaration still
// declares, and end on the newest. MESH_FAULT_AGENT_CUTS sets how many cuts (8 by default).

const CUTS = faultCount('MESH_FAULT_AGENT_CUTS', 8);
const DECLARE_EVERY_MS = 200;

/** The sequence in the version file, or null while there is none. */
const readVersion = (path: string): number | null => {
  try {
    return Number(/^v(\d+)/.exec(readFileSync(path, 'utf8'))?.[1] ?? NaN);
  } catch {
    return null;
  }
};

const between = (low: number, high: number): number => low + Math.floor(Math.random() * (high - low));

interface Published {
  sequence: number;
  /** when its publish began: from then on the agent may see it */
  from: number;
}

interface Sample {
  at: number;
  present: Set<string>;
  version: number | null;
  processAlive: boolean;
}

describe('an agent whose connection is cut and restored while its declaration changes', () => {
  let t: AgentTest | undefined;
  let proxy: CutProxy | undefined;
  let agent: Agent | undefined;
  afterEach(async () => {
    await agent?.stop();
    await proxy?.close();
    await t?.cleanup();
  });

  it('never applies an older declaration, never removes what the newest declares, and ends on the newest', async () => {
    const test = (t = await openAgentTest());
    const machine = join(test.root, 'machine');
    const paths = { machine, version: join(machine, 'version'), extra: join(machine, 'extra'), extraData: join(machine, 'extra', 'data') };
    // The keeper module is in every declaration, its version file changing each time; the extra
    // module comes and goes (declared on odd sequences), so some declarations remove something.
    const declaresExtra = (n: number): boolean => n % 2 === 1;
    const declares = (n: number, path: string): boolean => (path === paths.extra || path === paths.extraData ? declaresExtra(n) : true);
    const declaration = (n: number) =>
      test.declaration(n, [
        assignment('keeper', [directoryResource('keeper', 'dir', machine), fileResource('keeper', 'version', paths.version, `v${n}\n`), processResource('keeper', 'server', ['sleep', '300'])]),
        ...(declaresExtra(n) ? [assignment('extra', [directoryResource('extra', 'dir', paths.extra), fileResource('extra', 'data', paths.extraData, `extra of ${n}\n`)])] : []),
      ]);

    const accepted: number[] = [];
    const acceptedAt: number[] = [];
    let disconnects = 0;
    let unreadable = 0;
    let reportTimeouts = 0;
    const logLines = {
      write: (line: string): void => {
        const entry = JSON.parse(line) as { msg?: string; sequence?: number };
        if (entry.msg === 'declaration accepted' && typeof entry.sequence === 'number') {
          accepted.push(entry.sequence);
          acceptedAt.push(Date.now());
        }
        if (entry.msg === 'cannot read the declaration subject; trying again') unreadable++;
        if (entry.msg === 'report not published; kept to retry' && (entry as { err?: string }).err === 'timeout') reportTimeouts++;
        if (entry.msg === 'disconnected from NATS; everything keeps running') disconnects++;
      },
    };
    const reports: Report[] = [];
    const published: Published[] = [];
    const publish = async (n: number): Promise<void> => {
      published.push({ sequence: n, from: Date.now() });
      await test.publish(declaration(n));
    };

    proxy = await cutProxy(test.url);
    await publish(1);
    agent = new Agent({
      node: test.node,
      natsUrl: proxy.url,
      stateDir: test.stateDir,
      controllerKey: test.controllerKey.publicKey,
      wire: { prefix: test.names.prefix, nodesStream: test.names.nodes },
      timings: FAST,
      logger: pino({ level: 'info' }, logLines),
      onReport: (r) => void reports.push(r),
    });
    await agent.start();
    await test.reportWhere('the first declaration applied', (r) => r.sequence === 1 && r.resources.every((x) => x.outcome === 'applied'));
    const pid = await test.runningPid('keeper/server');

    const samples: Sample[] = [];
    const sampleNow = (): void => {
      const present = new Set(Object.values(paths).filter((p) => existsSync(p)));
      const version = readVersion(paths.version);
      samples.push({ at: Date.now(), present, version, processAlive: isAlive(pid) });
    };
    const sampler = setInterval(sampleNow, 50);

    let cutting = true;
    let next = 2;
    const declaring = (async () => {
      while (cutting) {
        await publish(next++);
        await sleep(DECLARE_EVERY_MS);
      }
    })();
    const cutsLog: string[] = [];
    /** per restore: when, and the newest declaration sent by then */
    const restores: { at: number; newest: number }[] = [];
    try {
      for (let cut = 1; cut <= CUTS; cut++) {
        // Each cut begins on a link that is up again: the agent has reconnected through the relay.
        const through = cut;
        await waitFor(`the agent reconnected before cut ${cut}`, () => agent?.status().connected === true && (proxy?.accepted() ?? 0) >= through);
        await sleep(between(400, 1_200));
        const down = between(200, 1_500);
        const newestBefore = published.at(-1)?.sequence;
        await proxy.cut();
        await sleep(down);
        await proxy.restore();
        restores.push({ at: Date.now(), newest: published.at(-1)?.sequence ?? 0 });
        cutsLog.push(`#${cut} ${down} ms (newest ${newestBefore} → ${published.at(-1)?.sequence})`);
      }
    } finally {
      cutting = false;
      await declaring;
    }
    // One more after the last restore, so the newest is one the agent can only have learnt over a reconnected link.
    const newest = next;
    await publish(newest);
    const final = await test.reportWhere(`declaration ${newest} applied`, (r) => r.sequence === newest && r.resources.every((x) => x.outcome === 'applied'));
    sampleNow();
    clearInterval(sampler);

    // A removal: present in one sample, gone in the next, while every declaration that could have
    // been the newest between the two still declares it, and so does every one the agent was
    // applying then (one that a newer replaced a moment after the agent read it may rightly remove
    // what the newer adds back: its order is checked by the sequences, not here).
    const removals: string[] = [];
    const newestAt = (at: number): number => published.filter((p) => p.from <= at).at(-1)?.sequence ?? 0;
    for (let i = 1; i < samples.length; i++) {
      const [before, after] = [samples[i - 1] as Sample, samples[i] as Sample];
      const applying = accepted.filter((_, k) => (acceptedAt[k] as number) <= after.at && ((acceptedAt[k + 1] ?? Infinity) as number) > before.at);
      const candidates = [...applying, ...published.filter((p) => p.sequence >= newestAt(before.at) && p.from <= after.at).map((p) => p.sequence)];
      for (const path of before.present) {
        if (!after.present.has(path) && candidates.every((n) => declares(n, path))) removals.push(`${path} gone between ${before.at} and ${after.at} (declared by ${candidates.join(', ')})`);
      }
      if (before.processAlive && !after.processAlive) removals.push(`keeper/server (pid ${pid}) stopped between ${before.at} and ${after.at}`);
    }
    const versions = samples.map((s) => s.version).filter((v): v is number => v !== null);
    const versionWentBack = versions.findIndex((v, i) => i > 0 && v < (versions[i - 1] as number));
    const acceptedWentBack = accepted.findIndex((s, i) => i > 0 && s <= (accepted[i - 1] as number));
    const applied = reports.filter((r) => r.refusal === null).map((r) => r.sequence);
    const reportWentBack = applied.findIndex((s, i) => i > 0 && s < (applied[i - 1] as number));
    // What the controller hears: the reports in CONTROL, in the order they were stored.
    const stored = (await test.reports()).filter((r) => r.refusal === null).map((r) => r.sequence);
    const storedWentBack = stored.findIndex((s, i) => i > 0 && s < (stored[i - 1] as number));
    const refusals = reports.filter((r) => r.refusal !== null);
    const record = test.records().find((r) => r.key === 'keeper/server');

    // How long after each restore the agent accepted the declaration that was newest then (or a later one).
    const catchUp = restores.map(({ at, newest: then }) => {
      const i = accepted.findIndex((n, k) => n >= then && (acceptedAt[k] as number) >= at);
      return i < 0 ? '?' : `${(acceptedAt[i] as number) - at}`;
    });
    report('agent connection cut and restored while declarations change', {
      cuts: `${CUTS}: ${cutsLog.join('; ')}`,
      'declarations sent': `${published.length} (1 … ${newest}, every ${DECLARE_EVERY_MS} ms; the extra module on odd sequences)`,
      'agent disconnects (its log)': `${disconnects}; connections through the relay ${proxy.accepted()}`,
      'declaration reads failed (its log)': `${unreadable}`,
      'caught up after each restore (ms)': catchUp.join(' '),
      'accepted (its log)': `${accepted.length}: ${accepted.join(' ')}`,
      'reported applied': `${applied.length} reports, sequences ${[...new Set(applied)].join(' ')}`,
      'reports in CONTROL': `${stored.length}, sequences ${[...new Set(stored)].join(' ')}${storedWentBack >= 0 ? `, WENT BACK at ${storedWentBack}` : ''}`,
      'report publishes that waited out their timeout (its log)': `${reportTimeouts}`,
      'refused reports': `${refusals.length}${refusals.length ? `: ${refusals.map((r) => `${r.sequence} (${r.refusal})`).join('; ')}` : ''}`,
      'disk samples': `${samples.length}; version file seen ${versions[0]} … ${versions.at(-1)}${versionWentBack >= 0 ? `, WENT BACK at sample ${versionWentBack}` : ', never back'}`,
      removals: removals.length ? removals.join('; ') : 'none of what the newest declared',
      'final report': `sequence ${final.sequence}, ${final.resources.length} resources ${[...new Set(final.resources.map((r) => r.outcome))].join('/')}`,
      'keeper/server': `pid ${pid} ${isAlive(pid) ? 'alive' : 'GONE'}, restarts ${record?.kind === 'process' ? record.restarts : '?'}`,
    });

    expect(disconnects).toBeGreaterThanOrEqual(CUTS);
    expect(acceptedWentBack).toBe(-1);
    expect(reportWentBack).toBe(-1);
    expect(storedWentBack).toBe(-1);
    expect(versionWentBack).toBe(-1);
    expect(removals).toEqual([]);
    expect(accepted.at(-1)).toBe(newest);
    expect(agent.status().sequence).toBe(newest);
    expect(readFileSync(paths.version, 'utf8')).toBe(`v${newest}\n`);
    expect(existsSync(paths.extraData)).toBe(declaresExtra(newest));
    expect(isAlive(pid)).toBe(true);
    expect(test.pidOf('keeper/server')).toBe(pid);
    expect(record).toMatchObject({ restarts: 0 });
  });
});
