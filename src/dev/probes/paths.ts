import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { busAuthenticator, type Identity } from '../../adapters/identity.js';
import { signCommand } from '../../adapters/operator-keys.js';
import { planToolSubject, toolSubject, type PlanAnswer, type ToolAnswer } from '../../controller/tool-server.js';
import { personInbox } from '../../domain/bus/users.js';
import type { MeshCommand } from '../../domain/mesh/commands.js';
import type { AttackOutcome } from '../security-probe.js';

// `npm run probe:security`, paths: an operator's signed commands that would put a module's things
// outside its place — a manifest whose file climbs out of its directory or whose region writes
// into /etc/sudoers, a directory placed on /etc or / — each sent to the running controller for real
// and refused by it, naming the path. The placements are only planned (`--plan`): a mesh that took
// one for real would have its agent make /etc the module's, and the probe must never be what harms
// the machine it runs on; the plan is decided by the same decider as the command.

export interface PathProbeTargets {
  url: string;
  wire: { prefix: string };
  /** the operator whose key signs the commands (`<stack dir>/operator.key`) */
  operator?: { name: string; key: Pick<Identity, 'secretKey'> };
  /** a registered module with a host directory requirement, and a node it is not assigned to; the demo's greeter and beta by default */
  /** the assignment to plan; without a module, one of the probe's own, registered in the same plan */
  place?: { module?: string; node: string; requirement: string };
  /** who connects to the bus, when not the operator itself (a test's harness principal) */
  connectAs?: { key: Pick<Identity, 'secretKey'>; inbox: string };
}

const TIMEOUT_MS = 30_000;

const escapingFile = (name: string) => ({
  name,
  requires: [{ name: 'config', contract: 'directory', provider: 'host' }],
  resources: { directories: [{ requirement: 'config' }], files: [{ name: 'x', in: 'config', as: '../../../../tmp/victim/x', template: 'owned\n' }] },
});

const sudoersRegion = (name: string) => ({
  name,
  resources: { regions: [{ name: 'root', file: '/etc/sudoers', template: 'mallory ALL=(ALL) NOPASSWD: ALL\n' }] },
});

export const probePaths = async (targets: PathProbeTargets): Promise<AttackOutcome[]> => {
  const suffix = Date.now().toString(36);
  // Unless told which assignment to plan, a module of the probe's own, registered in the same plan
  // (nothing is appended): one the mesh already runs on the node would be refused for that instead.
  const requirement = targets.place?.requirement ?? 'data';
  const own = targets.place?.module ? undefined : { name: `probe-place-${suffix}`, requires: [{ name: requirement, contract: 'directory', provider: 'host', mode: '0750' }] };
  const place = { module: targets.place?.module ?? own!.name, node: targets.place?.node ?? 'beta', requirement };
  const attacks: { attack: string; path: string; command: MeshCommand; plan: boolean; before?: MeshCommand }[] = [
    { attack: 'an operator registers a manifest whose file climbs out of its directory (files[].as "../../../../tmp/victim/x")', path: '../../../../tmp/victim/x', command: { type: 'register-module', manifest: escapingFile(`probe-escape-${suffix}`) }, plan: false },
    { attack: 'an operator registers a manifest whose region writes into /etc/sudoers', path: '/etc/sudoers', command: { type: 'register-module', manifest: sudoersRegion(`probe-sudoers-${suffix}`) }, plan: false },
    ...['/etc', '/', '/var/lib/mesh/.mesh'].map((path) => ({
      attack: `an operator plans mesh assign ${place.module} ${place.node} --place ${place.requirement}=${path} --plan`,
      path,
      command: { type: 'assign', module: place.module, node: place.node, hold: [], pins: {}, values: {}, placements: { [place.requirement]: path } } satisfies MeshCommand,
      plan: true,
      ...(own ? { before: { type: 'register-module', manifest: own } satisfies MeshCommand } : {}),
    })),
  ];
  if (!targets.operator) return attacks.map(({ attack }) => ({ attack, refused: false, untried: true, detail: 'no operator key to sign the command with, so the attack was not tried' }));
  const { name, key } = targets.operator;

  let nc: NatsConnection;
  try {
    const as = targets.connectAs ?? { key, inbox: personInbox(name) };
    nc = await connect({ servers: targets.url, name: 'security-probe-paths', maxReconnectAttempts: 0, timeout: 15_000, authenticator: busAuthenticator(as.key), inboxPrefix: as.inbox });
  } catch (error) {
    return attacks.map(({ attack }) => ({ attack, refused: false, untried: true, detail: `could not connect ${targets.connectAs ? 'to the bus' : `as operator ${name}`} (${(error as Error).message}), so the attack was not tried` }));
  }
  const outcomes: AttackOutcome[] = [];
  try {
    for (const { attack, path, command, plan, before } of attacks) {
      // Signing reads the operator's name and secret key alone.
      const sign = (what: MeshCommand, id: string) => signCommand({ operator: name, publicKey: '', secretKey: key.secretKey }, id, what, new Date(), plan ? 'plan' : 'carry-out');
      const signed = sign(command, `probe-paths-${suffix}-${outcomes.length}`);
      const first = before ? [sign(before, `probe-paths-${suffix}-${outcomes.length}-register`)] : [];
      try {
        const reply = plan
          ? await nc.request(planToolSubject(command.type, targets.wire.prefix), JSON.stringify({ commands: [...first, signed] }), { timeout: TIMEOUT_MS })
          : await nc.request(toolSubject(command.type, targets.wire.prefix), JSON.stringify(signed), { timeout: TIMEOUT_MS });
        const answer = JSON.parse(reply.string()) as ToolAnswer | PlanAnswer;
        if (answer.ok) {
          outcomes.push({ attack, refused: false, detail: `the controller took it${'summary' in answer ? `: ${answer.summary}` : ' (the plan would carry it out)'}` });
          continue;
        }
        const naming = answer.refused.find((p) => p.why.includes(JSON.stringify(path)));
        outcomes.push(
          naming
            ? { attack, refused: true, detail: `refused (${answer.error.code}): ${naming.what}: ${naming.why}` }
            : { attack, refused: false, detail: `refused, but for another reason than the path (${answer.refused.map((p) => `${p.what}: ${p.why}`).join('; ') || answer.error.code}): the attack was not judged` },
        );
      } catch (error) {
        outcomes.push({ attack, refused: false, untried: true, detail: `the controller did not answer (${(error as Error).message}), so the attack was not tried` });
      }
    }
  } finally {
    await nc.close().catch(() => undefined);
  }
  return outcomes;
};
