import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Subscription } from '@nats-io/nats-core';
import { nodeIdentity } from '../../src/adapters/enrolment-client.js';
import { newIdentity, nkeyOf } from '../../src/adapters/identity.js';
import { fromBase64, toBase64 } from '../../src/adapters/key-files.js';
import { newKeyPair, seal } from '../../src/adapters/sealing.js';
import { isAlive } from '../../src/dev/processes.js';
import { busIdentityRequestSchema, busIdentityToolSubject, type BusIdentityAnswer, type ModuleBusIdentity } from '../../src/domain/bus/module-identity.js';
import type { Resource } from '../../src/domain/declarations/declaration.js';
import type { Report } from '../../src/domain/reports/report.js';
import { assignment, openAgentTest, processResource, waitFor, type AgentTest } from './harness.js';

// A module that reads its bus identity: the agent asks the controller's tool for it before the
// module's processes may start, writes it 0600, holds them with the reason while nobody answers,
// and removes it when the module is undeclared. The controller here is a stand-in that answers as
// the real one does (tests/controller/bus-identity.int.test.ts tests the real one).

describe("an agent placing a module's bus identity", () => {
  let t: AgentTest;
  let tool: Subscription | undefined;
  afterEach(async () => {
    tool?.unsubscribe();
    tool = undefined;
    await t?.cleanup();
  });

  const key = newIdentity();
  const identityOf = (node: string): ModuleBusIdentity => ({
    node,
    module: 'listener',
    nkey: nkeyOf(key.publicKey),
    seed: toBase64(fromBase64(key.secretKey).subarray(0, 32)),
    inbox: `_INBOX.listener.${node}`,
    subjects: [`${t.names.prefix}.mod.greeter.event.greeted`],
  });
  /** Answers the tool as the controller would; `answer` decides what. */
  const serveTool = (answer: (request: { node: string; module: string }) => BusIdentityAnswer) => {
    tool = t.nc.subscribe(busIdentityToolSubject(t.names.prefix), {
      callback: (error, message) => {
        if (!error) message.respond(JSON.stringify(answer(busIdentityRequestSchema.parse(message.json()))));
      },
    });
  };
  const sealedToTheNode = ({ node, module }: { node: string; module: string }): BusIdentityAnswer => ({ ok: true, node, module, sealed: seal(JSON.stringify(identityOf(node)), nodeIdentity(t.stateDir).publicKey) });

  const listener = (path: string) => {
    const identity: Resource = { key: 'listener/bus-identity', module: 'listener', kind: 'bus-identity', path, owner: null, inbox: `_INBOX.listener.${t.node}`, consumes: ['greeter.greeted'] };
    // reads its identity, as a module would at start, then stays up
    const server = processResource('listener', 'server', ['sh', '-c', 'cat "$0" > /dev/null && exec sleep 300', path], { after: ['listener/bus-identity'], restartOn: ['listener/bus-identity'] });
    return assignment('listener', [identity, server]);
  };
  const outcomeOf = (report: Report, key: string) => report.resources.find((r) => r.key === key);

  it('holds the module’s processes while no controller answers, then writes the identity 0600 and starts them', async () => {
    t = await openAgentTest();
    const path = join(t.root, 'node', '.mesh', 'listener', 'bus-identity.json');
    await t.publish(t.declaration(1, [listener(path)]));
    await t.startAgent();
    const held = await t.reportWhere('the process held', (r) => outcomeOf(r, 'listener/server')?.outcome === 'held');
    expect(outcomeOf(held, 'listener/bus-identity')).toMatchObject({ outcome: 'held', reason: expect.stringMatching(/^no controller has handed it out yet: no controller answered/) });
    expect(outcomeOf(held, 'listener/server')?.reason).toMatch(/^waiting for listener\/bus-identity: no controller has handed it out yet/);
    expect(held.running).toEqual([]);
    expect(existsSync(path)).toBe(false);

    serveTool(sealedToTheNode);
    await t.reportWhere('the listener running', (r) => r.running.some((m) => m.module === 'listener'));
    expect(isAlive(await t.runningPid('listener/server'))).toBe(true);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual(identityOf(t.node));
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('asks once per declaration of it, and removes the file when the module is undeclared', async () => {
    t = await openAgentTest();
    const path = join(t.root, 'node', '.mesh', 'listener', 'bus-identity.json');
    let asked = 0;
    serveTool((request) => {
      asked++;
      return sealedToTheNode(request);
    });
    await t.publish(t.declaration(1, [listener(path)]));
    const agent = await t.startAgent();
    const pid = await t.runningPid('listener/server');
    const passes = agent.status().passes;
    await waitFor('more passes', () => agent.status().passes >= passes + 3);
    expect(asked).toBe(1);

    await t.publish(t.declaration(2, []));
    await t.reportWhere('nothing declared', (r) => r.sequence === 2);
    await waitFor('the process stopped', () => !isAlive(pid));
    expect(existsSync(path)).toBe(false);
    expect(t.records()).toEqual([]);
  });

  it('refuses what the controller refuses, and an answer sealed to another node, naming why; the processes stay held', async () => {
    t = await openAgentTest();
    const path = join(t.root, 'node', '.mesh', 'listener', 'bus-identity.json');
    serveTool(({ node }) => ({ ok: false, refused: [{ what: `${node}/listener`, why: `module listener is not assigned to node ${node}`, remedy: 'assign it first' }] }));
    await t.publish(t.declaration(1, [listener(path)]));
    await t.startAgent();
    const refused = await t.reportWhere('the identity refused', (r) => outcomeOf(r, 'listener/bus-identity')?.outcome === 'refused');
    expect(outcomeOf(refused, 'listener/bus-identity')?.reason).toBe(`handing out the bus identity of listener on ${t.node} refused: ${t.node}/listener: module listener is not assigned to node ${t.node}`);
    expect(outcomeOf(refused, 'listener/server')).toMatchObject({ outcome: 'held', reason: expect.stringMatching(/^waiting for listener\/bus-identity, which failed: handing out the bus identity/) });

    tool?.unsubscribe();
    const stranger = newKeyPair();
    serveTool(({ node, module }) => ({ ok: true, node, module, sealed: seal(JSON.stringify(identityOf(node)), stranger.publicKey) }));
    await t.reportWhere('an answer it cannot open refused', (r) => outcomeOf(r, 'listener/bus-identity')?.reason === `opening the bus identity of listener on ${t.node} refused: answer: it is not sealed to this node's key`);
    expect(existsSync(path)).toBe(false);
    expect(t.pidOf('listener/server')).toBeUndefined();
  });
});
