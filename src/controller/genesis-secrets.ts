import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { passwordFileName, roleName } from '../adapters/database-logins.js';
import { openAsSigner, sealToSigner } from '../adapters/sealing.js';
import { writeFileAtomic } from '../agent/atomic-write.js';
import { sealedSchema } from '../domain/bus/module-identity.js';
import { Refusal } from '../domain/refusal.js';
import { decideFoundSecret, MESH_SECRET_PREFIX, type FoundSecret } from '../domain/secrets/genesis.js';
import { UnavailableError } from '../errors.js';
import type { MeshService } from './mesh-service.js';

// The mesh's own first secrets (docs/decisions.md, "The mesh's own first secrets"). Genesis makes
// them before any vault runs — the PostgreSQL roles' passwords the control plane logs in with —
// seals each to the controller's key and to the first operator's, in one 0600 file beside those
// keys (never in a stream: a sealed value in a stream is an archive the day a key leaks), and
// records each in the log by name, purpose, version and the keys it is sealed to. The controller
// opens its copy to hand each to the vault once a holder of mesh-vault is assigned; the operator's
// copy is the way back when the controller's key is lost.

const FORMAT = 'mesh-genesis-secrets/1';

const sealedToSchema = z.strictObject({ name: z.string().min(1), key: z.string().min(1), sealed: sealedSchema });
const entrySchema = z.strictObject({ secret: z.string().min(1), purpose: z.string().min(1), version: z.number().int().positive(), sealedTo: z.array(sealedToSchema).min(1) });
const fileSchema = z.strictObject({ format: z.literal(FORMAT), mesh: z.string().min(1), secrets: z.array(entrySchema) });
export type GenesisSecretsFile = z.infer<typeof fileSchema>;

/** A key a genesis secret is sealed to: `controller`, or `operator:<name>`, and its ed25519 public key. */
export interface SealedTo {
  name: string;
  key: string;
}

export interface FoundationSecret {
  secret: string;
  purpose: string;
  value: string;
}

export const CONTROLLER_RECIPIENT = 'controller';
export const operatorRecipient = (operator: string): string => `operator:${operator}`;

const ROLES = [
  ['admin', 'mesh', "the cluster's bootstrap superuser: it sets up the roles"],
  ['projector', roleName('projector'), 'the projector: it owns the projections'],
  ['controller', roleName('controller'), 'the controller: its own tables, and reads'],
  ['reader', roleName('reader'), 'the readers: mesh status and every read verb'],
] as const;

/** The PostgreSQL roles' passwords the stack made in `secretsDir`: the mesh's own first secrets. */
export const postgresFoundationSecrets = (secretsDir: string): FoundationSecret[] =>
  ROLES.map(([owner, login, what]) => {
    const file = join(secretsDir, passwordFileName(owner));
    const value = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
    if (value === '') throw new UnavailableError(`no password in ${file} to seal at genesis: the stack writes it when it sets PostgreSQL up`, { file });
    return { secret: `${MESH_SECRET_PREFIX}postgres-${owner}`, purpose: `the PostgreSQL login ${login}, of ${what}`, value };
  });

export const readGenesisSecrets = (file: string): GenesisSecretsFile | undefined => {
  if (!existsSync(file)) return undefined;
  const parsed = fileSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
  if (!parsed.success) throw new UnavailableError(`${file} is not the mesh's genesis secrets: ${parsed.error.issues[0]?.message ?? 'invalid'}`, { file });
  return parsed.data;
};

/**
 * Seals every secret not in `file` yet to each of `recipients` and writes the file (0600, whole,
 * renamed over). What the file holds already is kept as it is: a secret is sealed once, at
 * genesis. Returns what the file names, as the log records it.
 */
export const sealGenesisSecrets = (file: string, mesh: string, secrets: readonly FoundationSecret[], recipients: readonly SealedTo[]): { recorded: FoundSecret[]; sealed: string[] } => {
  const existing = readGenesisSecrets(file);
  if (existing && existing.mesh !== mesh) throw new UnavailableError(`${file} holds the genesis secrets of mesh "${existing.mesh}", not "${mesh}"`, { file });
  const entries = [...(existing?.secrets ?? [])];
  const sealed: string[] = [];
  for (const secret of secrets) {
    if (entries.some((e) => e.secret === secret.secret)) continue;
    entries.push({ secret: secret.secret, purpose: secret.purpose, version: 1, sealedTo: recipients.map((r) => ({ name: r.name, key: r.key, sealed: sealToSigner(secret.value, r.key) })) });
    sealed.push(secret.secret);
  }
  if (sealed.length > 0) writeFileAtomic(file, `${JSON.stringify({ format: FORMAT, mesh, secrets: entries } satisfies GenesisSecretsFile, null, 2)}\n`, 0o600);
  return { recorded: entries.map((e) => ({ secret: e.secret, purpose: e.purpose, version: e.version, sealedTo: e.sealedTo.map(({ name, key }) => ({ name, key })) })), sealed };
};

/** Records each in the log as the mesh's own, once (`secret.founded`); returns those this call recorded. */
export const recordGenesisSecrets = async (mesh: MeshService, recorded: readonly FoundSecret[], actor: string): Promise<string[]> => {
  const appended: string[] = [];
  for (const secret of recorded) {
    const result = await mesh.appendDecided({
      subject: `recording the mesh's own secret ${secret.secret}`,
      decide: (state) => decideFoundSecret(secret, state),
      metadata: { commandId: `genesis:secret:${secret.secret}:${secret.version}`, actor },
    });
    if (result.events.length > 0) appended.push(secret.secret);
  }
  return appended;
};

/** The value of `secret` as the holder of `recipient`'s key opens it; a Refusal naming why not. */
export const openGenesisSecret = (file: string, secret: string, recipient: string, key: { publicKey: string; secretKey: string }): { version: number; value: string } => {
  const subject = `opening ${secret} from ${file}`;
  const read = readGenesisSecrets(file);
  if (!read) throw new Refusal(subject, [{ what: file, why: 'there is no such file', remedy: 'give the genesis secrets file of this mesh (MESH_GENESIS_SECRETS)', missing: 'secret' }]);
  const entry = read.secrets.find((e) => e.secret === secret);
  if (!entry) throw new Refusal(subject, [{ what: secret, why: `${file} holds no such secret (it holds ${read.secrets.map((e) => e.secret).join(', ') || 'none'})`, remedy: 'mesh secret status names the mesh\'s own', missing: 'secret' }]);
  const copy = entry.sealedTo.find((s) => s.name === recipient);
  if (!copy) throw new Refusal(subject, [{ what: secret, why: `it is sealed to ${entry.sealedTo.map((s) => s.name).join(' and ')}, not to ${recipient}`, remedy: 'open it with one of those keys' }]);
  const value = copy.key === key.publicKey ? openAsSigner(copy.sealed, key.secretKey) : undefined;
  if (value === undefined) throw new Refusal(subject, [{ what: secret, why: `the copy sealed to ${recipient} is sealed to key ${copy.key}, and this key does not open it`, remedy: `open it with the key ${recipient} had at genesis` }]);
  return { version: entry.version, value };
};
