import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import nacl from 'tweetnacl';
import { z } from 'zod';
import { writeFileAtomic } from '../agent/atomic-write.js';
import { fromBase64, toBase64, writePrivateJson } from '../adapters/key-files.js';
import { recipientSchema, type Recipient } from '../domain/secrets/vault-wire.js';
import { UnavailableError } from '../errors.js';

// What the vault holds, at rest: one file of mode 0600 in its own data directory, every value in
// it a tweetnacl secretbox under the vault's own key, which is a second 0600 file (or wherever
// MESH_VAULT_KEY_FILE puts it, away from the data). Nothing else of the mesh reads either: the
// vault is the one process that does (docs/decisions.md, "Where the vault keeps its secrets").
// Rewritten whole and renamed over on every change, so a vault killed mid-write keeps the old
// file or the new one.

const boxed = z.strictObject({ version: z.number().int().positive(), nonce: z.string(), box: z.string() });
const entrySchema = z.strictObject({
  secret: z.string().min(1),
  purpose: z.string(),
  recipients: z.array(recipientSchema),
  /** the versions the vault still holds, oldest first */
  versions: z.array(boxed).min(1),
  /** the version handed to a fetch that names none; the last held when absent */
  current: z.number().int().positive().optional(),
});
export type VaultEntry = z.infer<typeof entrySchema>;
const fileSchema = z.strictObject({ format: z.literal('mesh-vault/1'), secrets: z.array(entrySchema) });

export interface VaultStoreOptions {
  dataDir: string;
  /** the file of the at-rest key; `<dataDir>/vault.key` when not given */
  keyFile?: string;
}

export class VaultStore {
  private readonly file: string;
  private readonly key: Uint8Array;
  private readonly entries = new Map<string, VaultEntry>();

  constructor(options: VaultStoreOptions) {
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    this.file = join(options.dataDir, 'secrets.json');
    const keyFile = options.keyFile ?? join(options.dataDir, 'vault.key');
    // A key made afresh for data already there would open none of it: said, rather than started with.
    if (!existsSync(keyFile) && existsSync(this.file)) throw new UnavailableError(`the vault's data ${this.file} is there but its key ${keyFile} is not: give the key it was written with (--key-file, MESH_VAULT_KEY_FILE)`, { file: this.file, keyFile });
    this.key = loadOrMakeKey(keyFile);
    if (existsSync(this.file)) {
      const parsed = fileSchema.safeParse(JSON.parse(readFileSync(this.file, 'utf8')));
      if (!parsed.success) throw new UnavailableError(`the vault's data file ${this.file} is not one: ${parsed.error.issues[0]?.message ?? 'invalid'}`, { file: this.file });
      for (const entry of parsed.data.secrets) this.entries.set(entry.secret, entry);
      // Every value opens under this key, or the vault does not start: a wrong key is said at once.
      for (const entry of this.entries.values()) for (const version of entry.versions) this.open(entry.secret, version);
    }
  }

  get(secret: string): VaultEntry | undefined {
    return this.entries.get(secret);
  }

  size(): number {
    return this.entries.size;
  }

  /** The value of `version` of a secret (its current one when not named), if the vault holds it. */
  value(entry: VaultEntry, version?: number): { version: number; value: string } | undefined {
    const wanted = version ?? entry.current;
    const held = wanted === undefined ? entry.versions[entry.versions.length - 1] : entry.versions.find((v) => v.version === wanted);
    return held ? { version: held.version, value: this.open(entry.secret, held) } : undefined;
  }

  /**
   * Makes `version` of `secret` if the vault does not hold it (a fresh random value), and names
   * who may have it either way. With `current` (a rotation), keeps that version and `version`
   * alone, and hands out `current` to a fetch that names none. Returns whether a value was made.
   */
  ensure(secret: string, purpose: string, version: number, recipients: Recipient[], current?: number): boolean {
    const known = this.entries.get(secret);
    const held = known?.versions.some((v) => v.version === version) ?? false;
    const all = held ? (known?.versions ?? []) : [...(known?.versions ?? []), this.seal(newValue(), version)];
    const versions = current === undefined ? all.slice(-2) : all.filter((v) => v.version === version || v.version === current);
    const now = current ?? known?.current ?? version;
    const next: VaultEntry = { secret, purpose, recipients, versions, ...(versions.some((v) => v.version === now) ? { current: now } : {}) };
    this.entries.set(secret, next);
    this.save();
    return !held;
  }

  /**
   * Keeps a value made elsewhere (the mesh's own, made at genesis) as `version` of `secret`, for
   * nobody to fetch: `kept` when it is new here, `held` when the vault has that version with that
   * value already, `differs` when it has that version with another — which is never replaced.
   */
  keep(secret: string, purpose: string, version: number, value: string): 'kept' | 'held' | 'differs' {
    const known = this.entries.get(secret);
    const held = known?.versions.find((v) => v.version === version);
    if (known && held) return this.open(secret, held) === value ? 'held' : 'differs';
    this.entries.set(secret, { secret, purpose, recipients: known?.recipients ?? [], versions: [...(known?.versions ?? []), this.seal(value, version)].slice(-2), current: version });
    this.save();
    return 'kept';
  }

  private seal(value: string, version: number): VaultEntry['versions'][number] {
    const nonce = nacl.randomBytes(nacl.secretbox.nonceLength);
    return { version, nonce: toBase64(nonce), box: toBase64(nacl.secretbox(new TextEncoder().encode(value), nonce, this.key)) };
  }

  private open(secret: string, version: VaultEntry['versions'][number]): string {
    const opened = nacl.secretbox.open(fromBase64(version.box), fromBase64(version.nonce), this.key);
    if (!opened) throw new UnavailableError(`the vault's value of ${secret} (version ${version.version}) does not open under its key: the data and the key are not each other's`, { secret });
    return new TextDecoder().decode(opened);
  }

  private save(): void {
    writeFileAtomic(this.file, `${JSON.stringify({ format: 'mesh-vault/1', secrets: [...this.entries.values()] })}\n`, 0o600);
  }
}

/** 32 random bytes, base64url: a password every consumer's client takes as it is. */
const newValue = (): string => Buffer.from(nacl.randomBytes(32)).toString('base64url');

const loadOrMakeKey = (file: string): Uint8Array => {
  if (existsSync(file)) {
    const parsed = z.strictObject({ secretbox: z.string() }).safeParse(JSON.parse(readFileSync(file, 'utf8')));
    const key = parsed.success ? fromBase64(parsed.data.secretbox) : undefined;
    if (!key || key.length !== nacl.secretbox.keyLength) throw new UnavailableError(`${file} is not the vault's key (it needs { "secretbox": <32 bytes, base64> })`, { file });
    return key;
  }
  const key = nacl.randomBytes(nacl.secretbox.keyLength);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writePrivateJson(file, { secretbox: toBase64(key) });
  return key;
};
