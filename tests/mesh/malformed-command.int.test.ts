import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { sendSignedCommand } from '../../src/adapters/command-client.js';
import { createOperatorKey } from '../../src/adapters/operator-keys.js';
import { meshHome } from '../../src/config.js';
import { exitCodeFor, MeshError } from '../../src/errors.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';

// A command is read against its schema where it enters the controller: one that does not have
// the shape of its type is refused there, naming the field, as the CLI's client would meet it
// (exit 2), and nothing reaches the log.

describe('a malformed command sent to the controller', () => {
  let t: TestMesh;
  const keyFile = join(meshHome(), 'tmp', uniqueName('malformed-'), 'operator.key');
  const send = (command: Record<string, unknown>) =>
    // @ts-expect-error -- the client takes a MeshCommand; these bodies are malformed on purpose, as a client of another make could send them
    sendSignedCommand(t.nc, { operatorKeyFile: keyFile, subjectPrefix: t.names.prefix }, command, uniqueName('c'));
  const head = async (): Promise<number> => (await t.jsm.streams.info(t.names.logStream)).state.last_seq;
  const refusalOf = async (command: Record<string, unknown>): Promise<MeshError> => {
    const error = await send(command).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    if (!(error instanceof MeshError)) throw new Error(`expected a refusal, and got ${String(error)}`);
    return error;
  };

  beforeAll(async () => {
    t = await openTestMesh();
    const ada = createOperatorKey(keyFile, 'ada');
    await t.run({ type: 'add-operator', operator: 'ada', publicKey: ada.publicKey });
    // Everything an assign of distribution to lab1 needs is there: only the command's shape can be wrong.
    await t.run({ type: 'register-module', manifest: fixtureManifest('distribution') });
    await t.run({ type: 'add-node', node: 'lab1' });
    t.startTools();
  });
  afterAll(async () => {
    await t.close();
    rmSync(dirname(keyFile), { recursive: true, force: true });
  });

  const wellFormed = { type: 'assign', module: 'distribution', node: 'lab1', hold: [], pins: {}, values: {}, placements: {} };

  it('refuses an assign without pins, naming the field, exit 2, and appends nothing', async () => {
    const before = await head();
    const { pins: _left, ...withoutPins } = wellFormed;
    const error = await refusalOf(withoutPins);
    expect(error.code).toBe('validation');
    expect(exitCodeFor(error)).toBe(2);
    expect(error.details).toMatchObject({ field: 'command.pins' });
    expect(error.message).toMatch(/the assign command is malformed, so nothing was decided: command\.pins: .*expected record/);
    expect(await head()).toBe(before);
  });

  it('refuses a field of the wrong type, naming it, and every other wrong field with it', async () => {
    const before = await head();
    const wrongType = await refusalOf({ ...wellFormed, hold: 'mesh-registry' });
    expect(exitCodeFor(wrongType)).toBe(2);
    expect(wrongType.details).toMatchObject({ field: 'command.hold' });
    expect(wrongType.message).toMatch(/command\.hold: .*expected array, received string/);

    const twoWrong = await refusalOf({ ...wellFormed, node: 7, values: { port: 8080 } });
    expect(exitCodeFor(twoWrong)).toBe(2);
    expect(twoWrong.message).toMatch(/command\.node: .*expected string, received number/);
    expect(twoWrong.message).toMatch(/command\.values\.port: .*expected string, received number/);

    const unknownField = await refusalOf({ ...wellFormed, pin: {} });
    expect(exitCodeFor(unknownField)).toBe(2);
    expect(unknownField.message).toMatch(/pin/);
    expect(await head()).toBe(before);
  });

  it('decides the same assign once it is well formed', async () => {
    const before = await head();
    const result = await send(wellFormed);
    expect(result.summary).toMatch(/^distribution assigned to lab1/);
    expect(await head()).toBeGreaterThan(before);
  });
});
