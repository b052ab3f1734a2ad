import { randomUUID } from 'node:crypto';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { busAuthenticator, type Identity } from '../../adapters/identity.js';
import { signCommand, type OperatorKey } from '../../adapters/operator-keys.js';
import { planToolSubject, toolSubject, type PlanAnswer, type ToolAnswer } from '../../controller/tool-server.js';
import { personInbox } from '../../domain/bus/users.js';
import type { SignedCommand } from '../../domain/operators/signed-command.js';
import type { AttackOutcome, ProbeTargets } from '../security-probe.js';

// Attacks on what an operator's signature is good for, made with the operator's own key against
// a running mesh's controller: a command signed in 2001, one signed in 2099, a plan's signature
// sent to carry the command out (and the command's sent as a plan), and a refused command's id
// sent again — the same bytes, then signed afresh. Each must be refused for that reason, not for
// another: the command is `uncordon-node` of a node no mesh has, so if a defence is missing it is
// refused as "no such node" — reported as let through — and nothing changes on the mesh either way.

export interface CommandReplayTargets {
  url: string;
  wire: Pick<ProbeTargets['wire'], 'prefix'>;
  /** the operator whose key signs the attacks: `<stack dir>/operator.key` of a running `npm start` mesh */
  operator?: { name: string; key: Pick<Identity, 'secretKey'> };
  /** who reaches the bus, when not the operator itself (a test's harness, on a bus that knows no test's operators) */
  bus?: { key: Pick<Identity, 'secretKey'>; inbox: string };
}

const TIMEOUT_MS = 15_000;

type Answer = ToolAnswer | PlanAnswer;

const refusalOf = (answer: Answer): { what: string; why: string }[] => (answer.ok ? [] : answer.refused.map((r) => ({ what: r.what, why: r.why })));

/** Refused, and for the reason the attack is about: `what` is the field the refusal names. */
const judged = (attack: string, answer: Answer, what: (w: string) => boolean, expect: string): AttackOutcome => {
  const refused = refusalOf(answer);
  const named = refused.find((r) => what(r.what));
  if (named) return { attack, refused: true, detail: `refused: ${named.what}: ${named.why}` };
  if (answer.ok) return { attack, refused: false, detail: 'the controller carried it out' };
  return { attack, refused: false, detail: `refused, but not for ${expect}: ${refused.map((r) => `${r.what}: ${r.why}`).join('; ') || 'no reason given'}` };
};

export const probeCommandReplay = async (targets: CommandReplayTargets): Promise<AttackOutcome[]> => {
  const attacks = ['a command signed in 2001', 'a command signed in 2099', "a plan's signature sent to carry the command out", "a command's signature sent as a plan", 'a refused command id sent again (the same bytes)', 'a refused command id sent again (signed afresh)'];
  if (!targets.operator) return attacks.map((attack) => ({ attack, refused: false, untried: true, detail: 'no operator key to sign with, so the attack was not tried' }));
  const { name, key } = targets.operator;
  let nc: NatsConnection;
  try {
    const bus = targets.bus ?? { key, inbox: personInbox(name) };
    nc = await connect({ servers: targets.url, name: 'command-replay-probe', maxReconnectAttempts: 0, timeout: TIMEOUT_MS, authenticator: busAuthenticator(bus.key), inboxPrefix: bus.inbox });
  } catch (error) {
    return attacks.map((attack) => ({ attack, refused: false, untried: true, detail: `could not connect as operator ${name} (${(error as Error).message}), so the attack was not tried: is the mesh running? (\`npm start\`)` }));
  }
  const operator: OperatorKey = { operator: name, publicKey: '', secretKey: key.secretKey };
  const prefix = targets.wire.prefix;
  // A node no mesh has: carried out, it would only be refused as not found.
  const command = { type: 'uncordon-node', node: `probe-${randomUUID().slice(0, 8)}` };
  const call = async (signed: SignedCommand): Promise<ToolAnswer> => (await nc.request(toolSubject(command.type, prefix), JSON.stringify(signed), { timeout: TIMEOUT_MS })).json<ToolAnswer>();
  const plan = async (signed: SignedCommand): Promise<PlanAnswer> => (await nc.request(planToolSubject(command.type, prefix), JSON.stringify({ commands: [signed] }), { timeout: TIMEOUT_MS })).json<PlanAnswer>();
  const fresh = (purpose: 'carry-out' | 'plan' = 'carry-out', id = `probe-${randomUUID()}`) => signCommand(operator, id, command, new Date(), purpose);
  const outcomes: AttackOutcome[] = [];
  const attempt = async (attack: string, run: () => Promise<AttackOutcome>): Promise<void> => {
    try {
      outcomes.push(await run());
    } catch (error) {
      outcomes.push({ attack, refused: false, untried: true, detail: `the controller did not answer (${(error as Error).message}), so the attack was not tried` });
    }
  };
  try {
    const isTime = (w: string) => w === 'time';
    const isPurpose = (w: string) => w === 'purpose';
    await attempt(attacks[0] as string, async () => judged(attacks[0] as string, await call(signCommand(operator, `probe-${randomUUID()}`, command, new Date('2001-09-09T01:46:40.000Z'))), isTime, 'its signing time'));
    await attempt(attacks[1] as string, async () => judged(attacks[1] as string, await call(signCommand(operator, `probe-${randomUUID()}`, command, new Date('2099-01-01T00:00:00.000Z'))), isTime, 'its signing time'));
    await attempt(attacks[2] as string, async () => judged(attacks[2] as string, await call(fresh('plan')), isPurpose, 'what it was signed for'));
    await attempt(attacks[3] as string, async () => judged(attacks[3] as string, await plan(fresh('carry-out')), isPurpose, 'what it was signed for'));
    // A command refused (no such node), then its id again: refused as spent, naming that refusal.
    const id = `probe-${randomUUID()}`;
    const first = fresh('carry-out', id);
    await attempt(attacks[4] as string, async () => {
      const refused = await call(first);
      if (refused.ok) return { attack: attacks[4] as string, refused: false, untried: true, detail: 'the first command was carried out, so there was no refused id to send again' };
      return judged(attacks[4] as string, await call(first), (w) => w === `--command-id ${id}`, 'its spent command id');
    });
    await attempt(attacks[5] as string, async () => judged(attacks[5] as string, await call(fresh('carry-out', id)), (w) => w === `--command-id ${id}`, 'its spent command id'));
  } finally {
    await nc.close().catch(() => undefined);
  }
  return outcomes;
};
