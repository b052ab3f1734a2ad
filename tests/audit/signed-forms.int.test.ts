import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { signBytes } from '../../src/adapters/identity.js';
import { createOperatorKey, signCommand, type OperatorKey } from '../../src/adapters/operator-keys.js';
import { verifyLog } from '../../src/audit/verify-log.js';
import { meshHome } from '../../src/config.js';
import { CommandDispatcher } from '../../src/controller/command-dispatcher.js';
import { signedBytes, type SignedCommand } from '../../src/domain/operators/signed-command.js';
import { meshEventRegistry } from '../../src/domain/registry.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';

// The log keeps operators' commands as they were signed. One signed before a signature said what
// it was for (no `purpose`) still verifies, under that old form, though the controller refuses a
// new one in it; one signed now verifies with its purpose; and a command signed for a plan that
// somehow reached the log is named, since a plan's signature never carries a command out.

describe('mesh audit verify checks each stored command in the form it was signed in', () => {
  let t: TestMesh;
  let ada: OperatorKey;
  const dir = join(meshHome(), 'tmp', uniqueName('forms-'));

  beforeAll(async () => {
    t = await openTestMesh();
    ada = createOperatorKey(join(dir, 'operator.key'), 'ada');
    await t.run({ type: 'add-operator', operator: 'ada', publicKey: ada.publicKey });
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const verify = () => verifyLog(t.nc, { stream: t.names.logStream, subjectPrefix: t.names.logPrefix, registry: meshEventRegistry() });
  /** As a controller stores it (an older one, for the old form): the command with the events it caused. */
  const store = (signed: SignedCommand) => t.mesh.execute({ type: 'add-node', node: String(signed.command.node) }, { commandId: signed.commandId, actor: `operator:${signed.operator}` }, { signed });

  it('verifies a command stored in the old form beside one in the new, and names one signed for a plan', async () => {
    const unsigned = { commandId: uniqueName('old-'), operator: 'ada', command: { type: 'add-node', node: 'lab1' }, time: '2026-06-01T09:00:00.000Z' };
    const oldForm: SignedCommand = { ...unsigned, signature: signBytes(ada, signedBytes(unsigned)) };
    await store(oldForm);
    // The new form, through the controller's entry.
    await new CommandDispatcher(t.mesh).dispatch(signCommand(ada, uniqueName('new-'), { type: 'add-node', node: 'lab2' }, new Date()));
    const honest = await verify();
    expect(honest.failures).toEqual([]);
    expect(honest.signatures).toBe(2);

    // A plan's signature stored as if carried out, and an old-form command altered after signing.
    const planned = signCommand(ada, uniqueName('plan-'), { type: 'add-node', node: 'lab3' }, new Date(), 'plan');
    const plannedSeq = (await store(planned)).seq;
    const relabelledSeq = (await store({ ...oldForm, commandId: uniqueName('altered-'), command: { type: 'add-node', node: 'lab4' } })).seq;
    const report = await verify();
    expect(report.failures.map((f) => [f.seq, f.kind])).toEqual([
      [plannedSeq, 'signature'],
      [relabelledSeq, 'signature'],
    ]);
    expect(report.failures[0]?.why).toContain('was signed for a plan');
    expect(report.failures[1]?.why).toContain('does not match the stored command');
  });
});
