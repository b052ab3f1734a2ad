import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { busAuthenticator, type Identity } from '../../adapters/identity.js';
import { personInbox } from '../../domain/bus/users.js';
import type { AttackOutcome, ProbeTargets } from '../security-probe.js';

// A node applies only a declaration the controller signed for it. nats-server 2.9 lets the operator
// (who may read NODES and the LOG) aim an answer or a delivery anywhere, so these attacks aim them
// at the victim's declaration subject, where NODES stores them as its newest message: another
// node's real, signed declaration (a direct get of it, answered on the victim's subject, with its
// headers; a push consumer on NODES itself the server refuses as a cycle), and a commit of the log
// delivered there (a body that is no declaration and carries no declaration signature). Each is refused when the victim's agent still says it
// applied its own declaration — the sequence and digest the controller published for it before
// the attack. The operator has no route to an unsigned body of its own choosing (a module does:
// its event, then a pull with the victim's subject as the reply); the jest test
// tests/security/declaration-signature.int.test.ts publishes those into NODES directly.

export interface ForgedDeclarationTargets extends Pick<ProbeTargets, 'url' | 'wire'> {
  operator: { name: string; key: Pick<Identity, 'secretKey'> };
  /** the node whose declaration subject is aimed at (`beta` in the demo) */
  victimNode: string;
  /** a node with a declaration of its own, delivered at the victim's subject (`alpha` in the demo) */
  otherNode: string;
  /**
   * What the victim says it applied: its newest heartbeat or report (`mesh node show` reads it),
   * null when it is not known. The operator cannot subscribe to a node's heartbeat; the caller reads it.
   */
  applied: (node: string) => Promise<{ sequence: number | null; digest: string | null } | undefined>;
  /** how long the agent is given to act on what landed (it would within its heartbeat); 6 s unless told */
  settleMs?: number;
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Head {
  seq: number;
  sequence: number | undefined;
  digest: string | undefined;
  node: string | undefined;
}

/** The newest message on a node's declaration subject, read as the operator (who may read NODES). */
const headOf = async (nc: NatsConnection, stream: string, subject: string): Promise<Head | undefined> => {
  const reply = await nc.request(`$JS.API.DIRECT.GET.${stream}.${subject}`, '', { timeout: 5_000 });
  if ((reply.headers?.code ?? 0) >= 400) return undefined;
  let body: { sequence?: unknown; digest?: unknown; node?: unknown };
  try {
    body = reply.json();
  } catch {
    body = {};
  }
  return {
    seq: Number(reply.headers?.get('Nats-Sequence')),
    sequence: typeof body.sequence === 'number' ? body.sequence : undefined,
    digest: typeof body.digest === 'string' ? body.digest : undefined,
    node: typeof body.node === 'string' ? body.node : undefined,
  };
};

export const probeForgedDeclaration = async (targets: ForgedDeclarationTargets): Promise<AttackOutcome[]> => {
  const { url, wire, operator, victimNode, otherNode } = targets;
  const victimSubject = `${wire.prefix}.node.${victimNode}.declare`;
  const attacks = {
    other: `operator ${operator.name} has NODES deliver ${otherNode}'s signed declaration at ${victimSubject}: ${victimNode}'s agent must not apply it`,
    get: `operator ${operator.name} has NODES answer a direct get of ${otherNode}'s signed declaration on ${victimSubject}: ${victimNode}'s agent must not apply it`,
    log: `operator ${operator.name} has the log deliver a commit at ${victimSubject}: ${victimNode}'s agent must not apply it`,
  };
  let nc: NatsConnection;
  try {
    nc = await connect({ servers: url, name: 'security-probe-declarations', maxReconnectAttempts: 0, timeout: 15_000, authenticator: busAuthenticator(operator.key), inboxPrefix: personInbox(operator.name) });
  } catch (error) {
    return Object.values(attacks).map((attack) => ({ attack, refused: false, untried: true, detail: `could not connect as the operator (${(error as Error).message}), so the attack was not tried` }));
  }
  const consumer = `probe_decl_${Date.now().toString(36)}`;
  const made: { stream: string; name: string }[] = [];
  const outcomes: AttackOutcome[] = [];
  try {
    const real = await headOf(nc, wire.nodesStream, victimSubject);
    if (!real?.sequence || !real.digest) {
      return Object.values(attacks).map((attack) => ({ attack, refused: false, untried: true, detail: `${victimNode} has no declaration in ${wire.nodesStream} to keep, so the attack was not tried` }));
    }
    /** Sends the aimed request, then looks at what landed and at what the victim says it applied. */
    const aim = async (attack: string, send: () => Promise<string | undefined>): Promise<void> => {
      const before = await headOf(nc, wire.nodesStream, victimSubject);
      const refusal = await send();
      if (refusal) {
        outcomes.push({ attack, refused: true, detail: refusal });
        return;
      }
      await pause(1_000);
      const landed = await headOf(nc, wire.nodesStream, victimSubject);
      await pause(targets.settleMs ?? 6_000);
      const applied = await targets.applied(victimNode);
      const how = landed && landed.seq !== before?.seq ? `NODES took the delivery at seq ${landed.seq}${landed.node ? ` (a declaration for ${landed.node}, sequence ${landed.sequence})` : ' (no declaration)'}` : 'NODES took nothing';
      if (!applied) outcomes.push({ attack, refused: false, detail: `${how}; what ${victimNode} applied is not known, so whether it applied it is not either` });
      else if (applied.sequence === real.sequence && applied.digest === real.digest) {
        outcomes.push({ attack, refused: true, detail: `${how}; ${victimNode}'s agent did not apply it: it still says it applied its own declaration ${real.sequence} (${real.digest})` });
      } else outcomes.push({ attack, refused: false, detail: `${how}; ${victimNode} now says it applied sequence ${applied.sequence} (${applied.digest}), not its declaration ${real.sequence} (${real.digest})` });
    };
    /** A push consumer delivering at the victim's subject: the server's refusal, or undefined when it made it. */
    const deliverFrom = async (stream: string, name: string, filter: string | undefined): Promise<string | undefined> => {
      const created = await nc
        .request(`$JS.API.CONSUMER.CREATE.${stream}.${name}`, JSON.stringify({ stream_name: stream, config: { name, deliver_subject: victimSubject, ack_policy: 'none', deliver_policy: 'last', inactive_threshold: 5_000_000_000, ...(filter ? { filter_subject: filter } : {}) } }), { timeout: 5_000 })
        .then((reply) => reply.json<{ error?: { description?: string } }>())
        .catch((error: unknown) => ({ error: { description: (error as Error).message } }));
      made.push({ stream, name });
      return created.error ? `the server refused the consumer: ${created.error.description ?? 'error'}` : undefined;
    };
    const otherSubject = `${wire.prefix}.node.${otherNode}.declare`;
    await aim(attacks.other, () => deliverFrom(wire.nodesStream, `${consumer}_nodes`, otherSubject));
    await aim(attacks.get, async () => {
      nc.publish(`$JS.API.DIRECT.GET.${wire.nodesStream}.${otherSubject}`, '', { reply: victimSubject });
      await nc.flush();
      return undefined;
    });
    await aim(attacks.log, () => deliverFrom(wire.logStream, `${consumer}_log`, undefined));
  } finally {
    for (const { stream, name } of made) await nc.request(`$JS.API.CONSUMER.DELETE.${stream}.${name}`, '', { timeout: 2_000 }).catch(() => undefined);
    await nc.close().catch(() => undefined);
  }
  return outcomes;
};
