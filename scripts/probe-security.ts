// `npm run probe:security`: the attacks a process on this machine would try against the running
// local mesh (`npm start`), each tried for real and printed with its outcome. Exits 1 if any
// attack was let through, 2 if the stack is not there to attack or an attack could not be made.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadIdentityFile, moduleBusIdentity } from '../src/adapters/identity.js';
import { loadOperatorKey } from '../src/adapters/operator-keys.js';
import { devStackDir } from '../src/config.js';
import { stackPorts } from '../src/dev/stack.js';
import { probeDatabase } from '../src/dev/database-probe.js';
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
const alphaHost = join(dir, 'agents', 'alpha', 'host.key');
const targets: ProbeTargets = {
  url: `nats://127.0.0.1:${ports.nats}`,
  wire: { prefix: 'mesh', logStream: 'LOG', logPrefix: 'mesh.log', nodesStream: 'NODES', controlStream: 'CONTROL', eventsStream: 'EVENTS' },
  operator: { name: operator.operator, key: operator },
  module: { node: 'alpha', module: 'greeter', key: moduleBusIdentity(controller, 'alpha', 'greeter'), otherModule: 'caller' },
  ...(existsSync(alphaHost) ? { host: { node: 'alpha', key: loadIdentityFile(alphaHost), otherNode: 'beta' } } : {}),
};

const outcomes: AttackOutcome[] = [...(await probeBus(targets)), ...(await probeDatabase({ dir, port: ports.postgres }))];
for (const outcome of outcomes) {
  process.stdout.write(`${outcome.untried ? 'NOT TRIED' : outcome.refused ? 'refused  ' : 'ALLOWED  '} ${outcome.attack}\n          ${outcome.detail}\n`);
}
const allowed = outcomes.filter((o) => !o.refused && !o.untried);
const untried = outcomes.filter((o) => o.untried);
process.stdout.write(`\n${outcomes.length} attacks: ${outcomes.length - allowed.length - untried.length} refused, ${allowed.length} let through, ${untried.length} not tried\n`);
// A probe that could not make an attack proves nothing about it: that is a failure to probe, not a pass.
process.exit(allowed.length > 0 ? 1 : untried.length > 0 ? 2 : 0);
