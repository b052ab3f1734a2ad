import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { identityFromSeed, newIdentity } from '../identity.js';
import { fromBase64, toBase64 } from '../key-files.js';
import { identityFromEnv } from './connect.js';

// MESH_BUS_KEY names either a key file or a module's identity file as its node placed it.

describe('the identity MESH_BUS_KEY names', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bus-key-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is none without it', () => {
    expect(identityFromEnv({})).toBeUndefined();
  });

  it('reads a key file, with the inbox MESH_BUS_INBOX names', () => {
    const key = newIdentity();
    const file = join(dir, 'key.json');
    writeFileSync(file, JSON.stringify(key));
    expect(identityFromEnv({ MESH_BUS_KEY: file, MESH_BUS_INBOX: '_INBOX.tool' })).toEqual({ key, inbox: '_INBOX.tool' });
  });

  it("reads a module's placed identity file: its seed and its own inbox", () => {
    const seed = toBase64(new Uint8Array(32).fill(9));
    const file = join(dir, 'bus-identity.json');
    writeFileSync(file, JSON.stringify({ node: 'alpha', module: 'builder', nkey: 'U…', seed, inbox: '_INBOX.builder.alpha', subjects: [] }));
    const identity = identityFromEnv({ MESH_BUS_KEY: file });
    expect(identity?.inbox).toBe('_INBOX.builder.alpha');
    expect(identity?.key.secretKey).toBe(identityFromSeed(fromBase64(seed)).secretKey);
  });
});
