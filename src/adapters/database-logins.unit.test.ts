import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { databaseUrlFor, withoutPassword } from './database-logins.js';

describe('each part of the mesh logs in as its own role', () => {
  const secretsDir = mkdtempSync(join(tmpdir(), 'mesh-logins-'));
  writeFileSync(join(secretsDir, 'postgres-reader.password'), 'r3ad-only_pw\n');
  writeFileSync(join(secretsDir, 'postgres-projector.password'), '');
  afterAll(() => rmSync(secretsDir, { recursive: true, force: true }));
  const settings = { databaseUrl: 'postgres://127.0.0.1:15432/mesh', secretsDir };

  it("adds the role and the password from the role's file to the server's address", () => {
    expect(databaseUrlFor('reader', settings, {})).toBe('postgres://mesh_reader:r3ad-only_pw@127.0.0.1:15432/mesh');
  });

  it('takes a password file, or a whole URL, from the environment for one role', () => {
    const elsewhere = join(secretsDir, 'postgres-reader.password');
    expect(databaseUrlFor('controller', settings, { MESH_PG_PASSWORD_FILE_CONTROLLER: elsewhere })).toBe('postgres://mesh_controller:r3ad-only_pw@127.0.0.1:15432/mesh');
    expect(databaseUrlFor('controller', settings, { MESH_DATABASE_URL_CONTROLLER: 'postgres://ops:pw@db.example:5432/mesh' })).toBe('postgres://ops:pw@db.example:5432/mesh');
  });

  it('uses a MESH_DATABASE_URL that names its own user as given, for every role', () => {
    const own = { ...settings, databaseUrl: 'postgres://someone:secret@db.example/mesh' };
    expect(databaseUrlFor('reader', own, {})).toBe(own.databaseUrl);
    expect(databaseUrlFor('projector', own, {})).toBe(own.databaseUrl);
  });

  it('refuses a missing or empty password file, naming the file and how to make it', () => {
    expect(() => databaseUrlFor('controller', settings, {})).toThrow(
      expect.objectContaining({
        code: 'refused',
        message: expect.stringMatching(new RegExp(`no password for PostgreSQL role mesh_controller: ${join(secretsDir, 'postgres-controller.password')} does not exist\\. \`npx mesh dev up\` makes it`)),
      }),
    );
    expect(() => databaseUrlFor('projector', settings, {})).toThrow(expect.objectContaining({ code: 'refused', message: expect.stringContaining('postgres-projector.password is empty') }));
    expect(() => databaseUrlFor('reader', { ...settings, databaseUrl: 'not a url' }, {})).toThrow(expect.objectContaining({ code: 'validation' }));
  });

  it('leaves the password out of a URL shown in a message', () => {
    expect(withoutPassword('postgres://mesh_reader:r3ad-only_pw@127.0.0.1:15432/mesh')).toBe('postgres://mesh_reader@127.0.0.1:15432/mesh');
    expect(withoutPassword('postgres://127.0.0.1:15432/mesh')).toBe('postgres://127.0.0.1:15432/mesh');
  });
});
