import { Refusal } from '../refusal.js';
import type { SignedCommand } from './signed-command.js';

// How large a command may be. The log stores a command's events and the operator's signed command
// in one message, and the events repeat what the command carries (a registered manifest is in
// both), so a command may take at most half of the bus's message limit (nats-server's
// max_payload, 1 MiB here), less room for the envelope. Checked before it is sent and again where
// it enters the controller, so a command that could never be stored is refused at once, naming
// the limit and its largest parts — never sent to time out.

/** Room for the commit's envelope, event ids, times and a manifest's filled-in defaults. */
const ENVELOPE_ROOM = 16 * 1024;

export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** The largest signed command, in bytes, that a bus taking messages of `maxPayload` bytes can log. */
export const commandLimit = (maxPayload: number): number => Math.floor((maxPayload - ENVELOPE_ROOM) / 2);

const encoder = new TextEncoder();
const bytes = (value: unknown): number => encoder.encode(JSON.stringify(value) ?? '').length;

/** `5.0 MB`, `504 KiB`, `812 bytes`. */
export const showBytes = (n: number): string => (n >= 1024 * 1024 ? `${(n / (1024 * 1024)).toFixed(1)} MiB` : n >= 1024 ? `${Math.round(n / 1024)} KiB` : `${n} bytes`);

/** Every value in `value` with its path and encoded size, largest first. */
const partsOf = (value: unknown, path: string[] = [], into: { path: string; size: number; leaf: boolean }[] = []) => {
  const isContainer = value !== null && typeof value === 'object';
  if (path.length > 0) into.push({ path: path.join('.'), size: bytes(value), leaf: !isContainer });
  if (isContainer) for (const [key, item] of Object.entries(value as Record<string, unknown>)) partsOf(item, [...path, key], into);
  return into;
};

/** The parts to shrink: the deepest part holding most of the command, and the largest single values. */
export const largestParts = (command: Record<string, unknown>, count = 3): { path: string; size: number }[] => {
  const parts = partsOf(command).sort((a, b) => b.size - a.size);
  const leaves = parts.filter((p) => p.leaf);
  return (leaves.length > 0 ? leaves : parts).slice(0, count).map(({ path, size }) => ({ path, size }));
};

/** The refusal for a signed command too large to log, or undefined when it fits. */
export const commandTooLarge = (signed: SignedCommand, maxPayload: number): Refusal | undefined => {
  const size = bytes(signed);
  const limit = commandLimit(maxPayload);
  if (size <= limit) return undefined;
  const type = String(signed.command.type);
  const parts = largestParts(signed.command);
  const largest = parts[0];
  return new Refusal(`${type} (command ${signed.commandId})`, [
    {
      what: largest ? `command.${largest.path}` : 'command',
      why: `the ${type} command is ${showBytes(size)} signed, and a command is at most ${showBytes(limit)} (${limit} bytes): the log keeps it beside the events it decides, which repeat what it carries, in one message of the bus's ${showBytes(maxPayload)} limit (nats-server max_payload)`,
      remedy: `shrink it below ${showBytes(limit)}; its largest parts are ${parts.map((p) => `${p.path} (${showBytes(p.size)})`).join(', ')}${type === 'register-module' ? '. A manifest says what a module is: large content (data, a long file template) belongs in the module\'s built artifact or its source, not in the manifest' : ''}`,
    },
  ]);
};
