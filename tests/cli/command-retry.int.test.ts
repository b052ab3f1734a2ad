import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Subscription } from '@nats-io/nats-core';
import { sendSignedCommand } from '../../src/adapters/command-client.js';
import { createOperatorKey } from '../../src/adapters/operator-keys.js';
import { meshHome } from '../../src/config.js';
import { CommandDispatcher } from '../../src/controller/command-dispatcher.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { refusalAnswer, toolSubject, type ToolAnswer } from '../../src/controller/tool-server.js';
import type { SignedCommand } from '../../src/domain/operators/signed-command.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';

// The CLI sends a command again when its answer does not come: signed afresh, under the same
// command id. Here the controller decides the first send — the node is added — and its answer is
// lost on the way back; the retry is answered as a duplicate of it, and the node is added once.

describe('the CLI retries a command whose answer was lost, under the same id', () => {
  let t: TestMesh;
  let keyFile: string;
  let subscription: Subscription | undefined;

  beforeEach(async () => {
    t = await openTestMesh();
    keyFile = join(meshHome(), 'tmp', uniqueName('retry-'), 'operator.key');
    const ada = createOperatorKey(keyFile, 'ada');
    await t.run({ type: 'add-operator', operator: 'ada', publicKey: ada.publicKey });
  });
  afterEach(async () => {
    subscription?.unsubscribe();
    await t.close();
    rmSync(dirname(keyFile), { recursive: true, force: true });
  });

  it('re-signs each send with a fresh time and the same id, and the retry is answered as a duplicate', async () => {
    const dispatcher = new CommandDispatcher(new MeshService(t.newLog()));
    const sent: SignedCommand[] = [];
    // The controller's tool, except that the answer to the first send is lost.
    subscription = t.nc.subscribe(toolSubject('add-node', t.names.prefix), {
      callback: (_error, message) => {
        const signed = message.json<SignedCommand>();
        sent.push(signed);
        const first = sent.length === 1;
        void dispatcher
          .dispatch(signed, 'add-node')
          .then((result): ToolAnswer => ({ ok: true, summary: result.summary, seq: result.seq, duplicate: result.duplicate, events: result.events }))
          .catch(refusalAnswer)
          .then((answer) => {
            if (!first) message.respond(JSON.stringify(answer));
          });
      },
    });
    const id = uniqueName('cmd-');
    const answer = await sendSignedCommand(t.nc, { operatorKeyFile: keyFile, subjectPrefix: t.names.prefix }, { type: 'add-node', node: 'lab1' }, id, { timeoutMs: 1_500 });

    expect(sent).toHaveLength(2);
    expect(sent.map((s) => s.commandId)).toEqual([id, id]);
    expect(sent.map((s) => s.purpose)).toEqual(['carry-out', 'carry-out']);
    // Signed afresh: a time of its own, so a signature of its own.
    expect(Date.parse(sent[1]?.time ?? '')).toBeGreaterThan(Date.parse(sent[0]?.time ?? ''));
    expect(sent[1]?.signature).not.toBe(sent[0]?.signature);
    expect(answer).toMatchObject({ duplicate: true, summary: expect.stringContaining(`command ${id} was already carried out at seq`) });
    expect((await t.log.readAggregate('node.lab1')).events).toHaveLength(1);
  });

  it('gives up after its tries, naming the command id to send again', async () => {
    const sent: SignedCommand[] = [];
    subscription = t.nc.subscribe(toolSubject('add-node', t.names.prefix), { callback: (_error, message) => void sent.push(message.json<SignedCommand>()) });
    const id = uniqueName('cmd-');
    const error = await sendSignedCommand(t.nc, { operatorKeyFile: keyFile, subjectPrefix: t.names.prefix }, { type: 'add-node', node: 'lab1' }, id, { timeoutMs: 200, attempts: 3 }).catch((e: Error) => e);
    expect(error).toMatchObject({ code: 'unavailable', message: expect.stringContaining(`in 3 tries`) });
    expect((error as Error).message).toContain(`--command-id ${id}`);
    expect(sent.map((s) => s.commandId)).toEqual([id, id, id]);
  });
});
