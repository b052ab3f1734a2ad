import { chmodSync, writeFileSync } from 'node:fs';

// What the files holding keys share: keys as base64 text, and files only their owner can read.

export const toBase64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');
export const fromBase64 = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'base64'));

/** JSON in a file of mode 0600, also when the file existed with another mode. */
export const writePrivateJson = (file: string, value: unknown): void => {
  writeFileSync(file, `${JSON.stringify(value)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
};
