import { describe, expect, it } from '@jest/globals';
import { MeshFixture } from '../../../tests/helpers/given.js';
import { commandWindowSeconds, DEFAULT_COMMAND_WINDOW_SECONDS } from './command-window.js';
import { signedBytes } from './signed-command.js';

describe('the window operators’ commands are signed within', () => {
  it('is 5 minutes until an operator sets one, from 30 s to 1 h; setting the same again changes nothing', () => {
    const mesh = new MeshFixture({ systemSeats: false });
    expect(commandWindowSeconds(mesh.state)).toBe(DEFAULT_COMMAND_WINDOW_SECONDS);
    for (const seconds of [29, 3601, 90.5, -1]) expect(mesh.refusal({ type: 'set-command-window', seconds })).toEqual([expect.objectContaining({ what: 'seconds' })]);
    mesh.run({ type: 'set-command-window', seconds: 600 });
    expect(commandWindowSeconds(mesh.state)).toBe(600);
    expect(mesh.state.operators.commandWindow).toMatchObject({ seconds: 600 });
    const before = mesh.state.seq;
    mesh.run({ type: 'set-command-window', seconds: 600 });
    expect(mesh.state.seq).toBe(before);
  });
});

describe('what an operator signs', () => {
  const unsigned = { commandId: 'c1', operator: 'ada', command: { type: 'add-node', node: 'lab1' }, time: '2026-12-02T14:36:00.049Z' };
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

  it('says what the signature is for, so a plan’s bytes are never the command’s, and neither is the old form', () => {
    const forms = [signedBytes(unsigned), signedBytes({ ...unsigned, purpose: 'carry-out' }), signedBytes({ ...unsigned, purpose: 'plan' })].map(text);
    expect(new Set(forms).size).toBe(3);
    // The old form is exactly what commands were signed as before: the log's old signatures still verify.
    expect(forms[0]).toBe('{"command":{"node":"lab1","type":"add-node"},"commandId":"c1","operator":"ada","time":"2026-12-02T14:36:00.049Z"}');
    expect(forms[2]).toContain('"purpose":"plan"');
  });
});
