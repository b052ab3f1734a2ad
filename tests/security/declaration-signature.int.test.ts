import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/nats-core';
import { pino } from 'pino';
import { DECLARATION_SIGNATURE_HEADER, declarationHeaders } from '../../src/adapters/declaration-signature.js';
import { storedEnrolment } from '../../src/adapters/enrolment-client.js';
import { newIdentity } from '../../src/adapters/identity.js';
import type { Agent } from '../../src/agent/agent.js';
import { isAlive } from '../../src/dev/processes.js';
import { StateFolder } from '../../src/agent/state-folder.js';
import { meshHome } from '../../src/config.js';
import { declarationSubject, type Declaration } from '../../src/domain/declarations/declaration.js';
import { personInbox } from '../../src/domain/bus/users.js';
import { probeForgedDeclaration } from '../../src/dev/probes/declarations.js';
import type { AttackOutcome } from '../../src/dev/security-probe.js';
import { openAgentMesh, type AgentMesh } from '../helpers/agent-mesh.js';
import { enforcingBusMesh, type EnforcingBusMesh } from '../helpers/enforcing-bus.js';
import { uniqueName } from '../helpers/names.js';
import { testMeshNames, waitFor } from '../helpers/test-mesh.js';

// A node applies only a declaration the controller signed for it. What nats-server 2.9 lets anyone
// aim at a node's declaration subject lands in NODES as the subject's newest message; here it is
// put there directly (as the harness, into NODES) — unsigned, signed by another key, another
// node's real signed declaration, the node's own older one — and the node's agent applies none of
// them, keeps running what it ran, and applies the controller's next real declaration.

interface Line {
  level: number;
  msg: string;
  streamSeq?: number;
  why?: string;
  refusal?: string;
}

describe('a node applies only a declaration the controller signed for it', () => {
  let m: AgentMesh;
  let beta: Agent;
  const said: Line[] = [];
  const betaState = () => join(m.root, 'agents', 'beta');
  const pwned = () => join(m.root, 'pwned');
  const idlePid = (): number | undefined => {
    const record = new StateFolder(betaState()).loadRecords().find((r) => r.key === 'keeper/idle');
    return record?.kind === 'process' ? record.running?.pid : undefined;
  };
  const stored = async (node: string) => {
    const message = await m.t.jsm.streams.getMessage(m.t.names.nodesStream, { last_by_subj: declarationSubject(node, m.t.names.prefix) });
    if (!message) throw new Error(`no declaration for ${node}`);
    return message;
  };
  /** Puts `body` on beta's subject in NODES as it is, with `headers`; resolves with its stream sequence once beta's agent has judged it. */
  const land = async (body: Uint8Array, headers?: MsgHdrs): Promise<number> => {
    const ack = await jetstream(m.t.nc).publish(declarationSubject('beta', m.t.names.prefix), body, headers ? { headers } : {});
    await waitFor(`beta's agent judging NODES seq ${ack.seq}`, async () => said.find((l) => l.streamSeq === ack.seq), 20_000);
    return ack.seq;
  };
  let real: Declaration;
  let pid: number;

  beforeAll(async () => {
    m = await openAgentMesh();
    await m.t.run({ type: 'register-module', manifest: { name: 'keeper', resources: { processes: [{ name: 'idle', run: ['sleep', '600'] }] } } });
    await m.t.run({ type: 'register-module', manifest: { name: 'second', resources: { processes: [{ name: 'idle', run: ['sleep', '600'] }] } } });
    await m.addNode('alpha');
    await m.addNode('beta');
    await m.assign('keeper', 'alpha');
    await m.assign('keeper', 'beta');
    beta = await m.startAgent('beta', { logger: pino({ level: 'info' }, { write: (line: string) => void said.push(JSON.parse(line) as Line) }) });
    real = await waitFor('beta declared with keeper', async () => {
      const declared = await m.t.declarationOf('beta');
      return declared?.assignments.length === 1 ? declared : undefined;
    });
    await waitFor("beta's agent applied its declaration", async () => beta.status().lastReport?.sequence === real.sequence && beta.status().lastReport?.resources.every((r) => r.outcome === 'applied'));
    pid = await waitFor('the process running', async () => idlePid());
    await waitFor('alpha declared', () => m.t.declarationOf('alpha'));
  }, 90_000);

  afterAll(async () => m?.close());

  /** What a forger wants beta to run: not its process, and a file of its choosing. */
  const forged = (): Declaration => ({
    ...real,
    sequence: real.sequence + 100,
    digest: `sha256:${'f'.repeat(64)}`,
    assignments: [{ ...(real.assignments[0] as Declaration['assignments'][number]), resources: [{ key: 'keeper/pwned', module: 'keeper', kind: 'file', path: pwned(), content: 'owned', mode: '0644' }] }],
  });
  const bytes = (declaration: Declaration) => new TextEncoder().encode(JSON.stringify(declaration));

  const expectKeptRunning = () => {
    expect(beta.status().sequence).toBe(real.sequence);
    expect(idlePid()).toBe(pid);
    expect(isAlive(pid)).toBe(true);
    expect(existsSync(pwned())).toBe(false);
  };

  it('does not apply an unsigned declaration', async () => {
    const seq = await land(bytes(forged()));
    expect(said.find((l) => l.streamSeq === seq)).toMatchObject({ level: 40, why: expect.stringMatching(/^not signed by the controller: it carries no Mesh-Declaration-Signature/) });
    expectKeptRunning();
  });

  it('does not apply a declaration signed by another key', async () => {
    const body = bytes(forged());
    const seq = await land(body, declarationHeaders(newIdentity(), body));
    expect(said.find((l) => l.streamSeq === seq)).toMatchObject({ level: 40, why: expect.stringMatching(/^not signed by the controller: its signature does not verify/) });
    expectKeptRunning();
  });

  it("does not apply a real signature over a changed body", async () => {
    const original = await stored('alpha');
    const body = bytes({ ...forged(), node: 'beta' });
    const headers = declarationHeaders(newIdentity(), body);
    headers.set(DECLARATION_SIGNATURE_HEADER, original.header.get(DECLARATION_SIGNATURE_HEADER));
    const seq = await land(body, headers);
    expect(said.find((l) => l.streamSeq === seq)?.why).toMatch(/^not signed by the controller: its signature does not verify/);
    expectKeptRunning();
  });

  it("does not apply alpha's real signed declaration aimed at beta", async () => {
    const alpha = await stored('alpha');
    const headers = declarationHeaders(newIdentity(), alpha.data);
    headers.set(DECLARATION_SIGNATURE_HEADER, alpha.header.get(DECLARATION_SIGNATURE_HEADER));
    const seq = await land(alpha.data, headers);
    expect(said.find((l) => l.streamSeq === seq)).toMatchObject({ level: 40, why: 'signed for node alpha', msg: 'declaration not applied: signed for node alpha' });
    expectKeptRunning();
  });

  it('applies the controller\'s next real declaration for beta, published over what landed', async () => {
    await m.assign('second', 'beta');
    const next = await waitFor('the next declaration for beta', async () => {
      const declared = await m.t.declarationOf('beta').catch(() => undefined);
      return declared && declared.node === 'beta' && declared.assignments.length === 2 ? declared : undefined;
    });
    expect(next.sequence).toBeGreaterThan(real.sequence);
    await waitFor('beta applied it', async () => beta.status().sequence === next.sequence && beta.status().lastReport?.resources.every((r) => r.outcome === 'applied'));
    expect(idlePid()).toBe(pid);
    expect(existsSync(pwned())).toBe(false);
    real = next;
  });

  it("refuses beta's own older signed declaration put back (the sequence only grows)", async () => {
    // a signed declaration of beta's, as the controller would have made it, at a lower sequence
    const older = { ...real, sequence: real.sequence - 1, assignments: [] };
    const body = bytes(older);
    const ack = await jetstream(m.t.nc).publish(declarationSubject('beta', m.t.names.prefix), body, { headers: declarationHeaders(m.t.controllerKey, body) });
    // its signature holds: refused by its sequence, as before declarations were signed
    await waitFor('the refusal', async () => said.find((l) => l.msg === 'declaration refused' && l.refusal?.includes(`sequence ${older.sequence} is lower than ${real.sequence}`)));
    expect(said.find((l) => l.streamSeq === ack.seq)).toBeUndefined();
    expect(beta.status().sequence).toBe(real.sequence);
    expect(isAlive(pid)).toBe(true);
  });

  it('applies nothing when it has no controller key (enrolled before declarations were signed), saying what to pass', async () => {
    const lines: Line[] = [];
    // alpha's agent, enrolled by no answer that named a key, and given none
    const alpha = await m.startAgent('alpha', { controllerKey: undefined, logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Line) }) });
    await waitFor("alpha's agent judging its declaration", async () => lines.find((l) => l.streamSeq !== undefined), 20_000);
    expect(lines.find((l) => l.level === 50)?.msg).toMatch(/no controller key to check declarations against.*--controller-key KEY\|FILE/);
    expect(lines.find((l) => l.streamSeq !== undefined)?.why).toMatch(/^no controller key/);
    expect(alpha.status().sequence).toBeNull();
    expect(new StateFolder(join(m.root, 'agents', 'alpha')).loadRecords()).toEqual([]);
  });
});

describe("the operator's deliveries aimed at a node's declaration subject (probe)", () => {
  const dir = join(meshHome(), 'tmp', uniqueName('decl-probe-'));
  const names = testMeshNames(uniqueName('t'));
  const operatorKey = newIdentity();
  let bus: EnforcingBusMesh;
  let beta: Agent;
  let outcomes: AttackOutcome[];

  beforeAll(async () => {
    bus = await enforcingBusMesh(dir, names);
    await bus.t.run({ type: 'add-operator', operator: 'ada', publicKey: operatorKey.publicKey });
    await bus.t.run({ type: 'register-module', manifest: { name: 'keeper' } });
    await bus.t.run({ type: 'add-node', node: 'alpha', address: '127.0.0.1' });
    await bus.t.run({ type: 'add-node', node: 'beta', address: '127.0.0.1' });
    await bus.t.run({ type: 'assign', module: 'keeper', node: 'alpha', hold: [], pins: {}, values: {}, placements: {} });
    // beta enrols with a token: the enrolment answer is what gives its agent the controller's key
    beta = await bus.startAgent('beta', join(dir, 'beta'));
    const declared = await waitFor('beta declared', () => bus.t.declarationOf('beta'), 20_000);
    await waitFor('beta applied it', async () => beta.status().sequence === declared.sequence, 20_000);
    await waitFor('alpha declared', () => bus.t.declarationOf('alpha'), 20_000);
    await bus.connectWhenKnown('ada', { key: operatorKey, inbox: personInbox('ada') });
    outcomes = await probeForgedDeclaration({
      url: bus.url,
      wire: { ...names, eventsStream: `EVENTS_${names.prefix}` },
      operator: { name: 'ada', key: operatorKey },
      victimNode: 'beta',
      otherNode: 'alpha',
      applied: async () => ({ sequence: beta.status().sequence, digest: beta.status().lastReport?.digest ?? null }),
      settleMs: 1_500,
    });
  }, 120_000);

  afterAll(async () => bus?.close());

  it("kept the controller's key from its enrolment answer", () => {
    expect(storedEnrolment(join(dir, 'beta'))?.controllerKey).toBe(bus.t.controllerKey.publicKey);
  });

  it('tried every attack, and beta applied none', () => {
    expect(outcomes.length).toBe(3);
    for (const o of outcomes) {
      expect(o.untried).toBeUndefined();
      expect(o).toMatchObject({ refused: true });
    }
    // the server will not deliver NODES into NODES; a direct get answered there lands alpha's signed declaration, which beta does not apply
    expect(outcomes[0]?.detail).toMatch(/refused the consumer: .*cycle/);
    // (nats-server 2.9 may or may not store a direct get's answer there: either way beta keeps its own)
    expect(outcomes[1]?.detail).toMatch(/beta's agent did not apply it: it still says it applied its own declaration/);
    expect(outcomes[2]?.detail).toMatch(/did not apply it|NODES took nothing/);
  });
});
