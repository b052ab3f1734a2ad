// `npm run probe:security`: the attacks a process on this machine would try against the running
// local mesh (`npm start`, or the stack MESH_DEV_DIR names), each tried for real and printed with
// its outcome. Exits 1 if any attack was let through, 2 if the stack is not there to attack or an
// attack could not be made.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadIdentityFile, moduleBusIdentity } from '../src/adapters/identity.js';
import { loadOperatorKey } from '../src/adapters/operator-keys.js';
import { devStackDir } from '../src/config.js';
import { DEFAULT_FACT_INTERVAL_MS } from '../src/controller/fact-budget.js';
import { stackPorts } from '../src/dev/stack.js';
import { probeDatabase } from '../src/dev/database-probe.js';
import { probeAimedReport } from '../src/dev/probes/aimed-report.js';
import { probeBusReads } from '../src/dev/probes/bus-reads.js';
import { probeCommandReplay } from '../src/dev/probes/command-replay.js';
import { probeConsole } from '../src/dev/probes/console.js';
import { probeImpersonation } from '../src/dev/probes/impersonation.js';
import { probeLogGrowth } from '../src/dev/probes/log-growth.js';
import { probePaths } from '../src/dev/probes/paths.js';
import { probeBus, type AttackOutcome, type ProbeTargets } from '../src/dev/security-probe.js';

const dir = devStackDir();
const controllerFile = join(dir, 'controller.key');
if (!existsSync(controllerFile)) {
  process.stderr.write(`no local mesh at ${dir}: run \`npm start\` first, then probe it\n`);
  process.exit(2);
}
const ports = stackPorts(dir);
const controller = loadIdentityFile(controllerFile);
const operator = loadOperatorKey(join(dir, 'operator.key'));
const hostOf = (node: string) => {
  const file = join(dir, 'agents', node, 'host.key');
  return existsSync(file) ? loadIdentityFile(file) : undefined;
};
const [alpha, beta] = [hostOf('alpha'), hostOf('beta')];
const url = `nats://127.0.0.1:${ports.nats}`;
const consoleUrl = `http://127.0.0.1:${ports.http}`;
const targets: ProbeTargets = {
  url,
  wire: { prefix: 'mesh', logStream: 'LOG', logPrefix: 'mesh.log', nodesStream: 'NODES', controlStream: 'CONTROL', eventsStream: 'EVENTS' },
  operator: { name: operator.operator, key: operator },
  module: { node: 'alpha', module: 'greeter', key: moduleBusIdentity(controller, 'alpha', 'greeter'), otherModule: 'caller' },
  ...(alpha ? { host: { node: 'alpha', key: alpha, otherNode: 'beta' } } : {}),
};
const intervalMs = Number(process.env.MESH_FACT_INTERVAL_MS ?? DEFAULT_FACT_INTERVAL_MS);

const print = (outcome: AttackOutcome): void => {
  process.stdout.write(`${outcome.untried ? 'NOT TRIED' : outcome.refused ? 'refused  ' : 'ALLOWED  '} ${outcome.attack}\n          ${outcome.detail}\n`);
};
const outcomes: AttackOutcome[] = [];
// Each family in turn, printed as it ends: a probe that takes a while says where it is.
const families: [string, () => Promise<AttackOutcome[]>][] = [
  ['the bus: who may connect, say and read', () => probeBus(targets)],
  ['PostgreSQL: who may log in and what each role may do', () => probeDatabase({ dir, port: ports.postgres })],
  ['one identity speaking for another', () => probeImpersonation({ ...targets, ...(beta ? { host: { node: 'beta', key: beta, otherNode: 'alpha' } } : {}), httpUrl: consoleUrl })],
  ['signed commands out of their time or purpose, and replayed', () => probeCommandReplay({ url, wire: targets.wire, operator: targets.operator! })],
  ["paths that leave a module's place", () => probePaths({ url, wire: targets.wire, operator: targets.operator! })],
  ["a report aimed at a node's subject by someone else", () => probeAimedReport({ ...targets, httpUrl: consoleUrl, node: 'alpha' })],
  ['a node growing the log', () => probeLogGrowth({ url, wire: targets.wire, ...(beta ? { host: { node: 'beta', key: beta } } : {}), operator: targets.operator!, intervalMs })],
  ['reading the bus without a reason', () => probeBusReads({ url, wire: targets.wire, operator: targets.operator!, victimNode: 'beta' })],
  ['the console and API under abuse', () => probeConsole({ consoleUrl, operator: targets.operator! })],
];
for (const [family, probe] of families) {
  process.stdout.write(`\n== ${family}\n`);
  const found = await probe().catch((error: unknown): AttackOutcome[] => [{ attack: family, refused: false, untried: true, detail: `the probe itself failed: ${(error as Error).message}` }]);
  found.forEach(print);
  outcomes.push(...found);
}
const allowed = outcomes.filter((o) => !o.refused && !o.untried);
const untried = outcomes.filter((o) => o.untried);
process.stdout.write(`\n${outcomes.length} attacks: ${outcomes.length - allowed.length - untried.length} refused, ${allowed.length} let through, ${untried.length} not tried\n`);
// A probe that could not make an attack proves nothing about it: that is a failure to probe, not a pass.
process.exit(allowed.length > 0 ? 1 : untried.length > 0 ? 2 : 0);
