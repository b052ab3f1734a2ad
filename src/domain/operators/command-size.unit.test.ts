import { describe, expect, it } from '@jest/globals';
import { commandLimit, commandTooLarge, largestParts } from './command-size.js';

const signed = (command: Record<string, unknown>) => ({ commandId: 'c1', operator: 'ada', command, time: '2026-01-01T00:00:00.000Z', signature: 'x'.repeat(88) });

describe('how large a command may be', () => {
  it('is half the bus message limit, less room for the envelope', () => {
    expect(commandLimit(1024 * 1024)).toBe((1024 * 1024 - 16 * 1024) / 2);
  });

  it('refuses a 5 MB manifest, naming the limit and its largest part', () => {
    const manifest = { name: 'big', resources: { files: [{ name: 'blob', in: 'data', as: 'blob.txt', template: 'x'.repeat(5_000_000) }] } };
    const refusal = commandTooLarge(signed({ type: 'register-module', manifest }), 1024 * 1024);
    expect(refusal?.code).toBe('refused');
    const [problem] = refusal?.problems ?? [];
    expect(problem?.what).toBe('command.manifest.resources.files.0.template');
    expect(problem?.why).toMatch(/the register-module command is 4\.8 MiB signed, and a command is at most 504 KiB \(516096 bytes\).*1\.0 MiB limit \(nats-server max_payload\)/);
    expect(problem?.remedy).toMatch(/shrink it below 504 KiB; its largest parts are manifest\.resources\.files\.0\.template \(4\.8 MiB\)/);
  });

  it('lets a command within the limit through', () => {
    expect(commandTooLarge(signed({ type: 'add-node', node: 'lab1' }), 1024 * 1024)).toBeUndefined();
  });

  it('names the largest values first', () => {
    expect(largestParts({ a: 'x'.repeat(10), b: { c: 'y'.repeat(100) } }, 1)).toEqual([{ path: 'b.c', size: 102 }]);
  });
});
