import { z } from 'zod';
import { defineEvent } from '../events/registry.js';

// What the log knows of a secret: its name, what it is for, which nodes may have it, and its
// version — never its value (ADR 0113; design 32 §10). The vault makes the value and keeps it;
// the controller records here what the vault confirmed it holds.

const secret = z.string().min(1);
const recipients = z.array(z.string().min(1));

/** The vault made a version of a secret and will hand it to these nodes alone. */
export const SecretMade = defineEvent({
  type: 'secret.made',
  version: 1,
  schema: z.strictObject({ secret, purpose: z.string().min(1), recipients, version: z.number().int().positive() }),
});

/** The nodes that may have a secret changed (a consumer moved, a provider re-resolved); its value did not. */
export const SecretShared = defineEvent({
  type: 'secret.shared',
  version: 1,
  schema: z.strictObject({ secret, recipients, version: z.number().int().positive() }),
});

const version = z.number().int().positive();
const party = z.strictObject({ node: z.string().min(1), module: z.string().min(1) });
export type RotationParty = z.infer<typeof party>;

// A rotation, step by step (docs/decisions.md, "Rotating a secret"): started by an operator, the
// new value made by the vault, both credentials in force at every applier, the new one confirmed by
// every reader, then the old one retired — or abandoned before that. Each names the new version.

/** An operator asked for a new value: from `from` to `version`, with these parties, fixed now. */
export const SecretRotationStarted = defineEvent({
  type: 'secret.rotation-started',
  version: 1,
  schema: z.strictObject({ secret, from: version, version, parties: z.enum(['two', 'one']), appliers: z.array(party), readers: z.array(party) }),
});

/** The vault holds the new version beside the current one. */
export const SecretRotationMade = defineEvent({
  type: 'secret.rotation-made',
  version: 1,
  schema: z.strictObject({ secret, version }),
});

/** An applier runs with both versions placed: both credentials are in force there. */
export const SecretRotationApplied = defineEvent({
  type: 'secret.rotation-applied',
  version: 1,
  schema: z.strictObject({ secret, version, node: z.string().min(1), module: z.string().min(1), declarationSequence: z.number().int().nonnegative() }),
});

/** A reader runs with the new version alone. */
export const SecretRotationConfirmed = defineEvent({
  type: 'secret.rotation-confirmed',
  version: 1,
  schema: z.strictObject({ secret, version, node: z.string().min(1), module: z.string().min(1), declarationSequence: z.number().int().nonnegative() }),
});

/** Every applier applied and every reader confirmed: the old value is gone from the vault, `version` is current. */
export const SecretRotationRetired = defineEvent({
  type: 'secret.rotation-retired',
  version: 1,
  schema: z.strictObject({ secret, version, retired: version }),
});

/**
 * An operator gave the rotation up before the old value was retired: the old version stays current.
 * Once readers were handed the new value, the first one unwinds in two steps: readers are declared
 * the old value again while the appliers keep both, and the rotation ends when every reader runs
 * with the old one (`secret.rotation-reverted`); a second one, while it unwinds, ends it at once.
 */
export const SecretRotationAbandoned = defineEvent({
  type: 'secret.rotation-abandoned',
  version: 1,
  schema: z.strictObject({ secret, version, reason: z.string() }),
});

/** A reader of an abandoned rotation runs with the old version alone again. */
export const SecretRotationReverted = defineEvent({
  type: 'secret.rotation-reverted',
  version: 1,
  schema: z.strictObject({ secret, version, node: z.string().min(1), module: z.string().min(1), declarationSequence: z.number().int().nonnegative() }),
});

// The mesh's own secrets (docs/decisions.md, "The mesh's own first secrets"): made at genesis,
// before any vault runs, sealed to the controller's key and the first operator's in a file beside
// them, then handed to the vault by the controller once a holder of mesh-vault is assigned.

const sealedTo = z.strictObject({
  /** `controller`, or `operator:<name>` */
  name: z.string().min(1),
  /** its ed25519 public key, which the value is sealed to */
  key: z.string().min(1),
});

/** Genesis made one of the mesh's own secrets and sealed it, in its genesis file, to these keys alone. */
export const SecretFounded = defineEvent({
  type: 'secret.founded',
  version: 1,
  schema: z.strictObject({ secret, purpose: z.string().min(1), version: z.number().int().positive(), sealedTo: z.array(sealedTo).min(1) }),
});

/** The vault (this holder of mesh-vault) holds the mesh's own secret, at this version. */
export const SecretHandedOver = defineEvent({
  type: 'secret.handed-over',
  version: 1,
  schema: z.strictObject({ secret, version: z.number().int().positive(), vault: party }),
});

export const secretEvents = [SecretMade, SecretShared, SecretFounded, SecretHandedOver, SecretRotationStarted, SecretRotationMade, SecretRotationApplied, SecretRotationConfirmed, SecretRotationRetired, SecretRotationAbandoned, SecretRotationReverted] as const;

/** A secret's aggregate: its name's `/` as a subject token boundary (`postgres-database/lab1-gitea` → `secret.postgres-database.lab1-gitea`). */
export const secretAggregate = (name: string): string => `secret.${name.split('/').join('.')}`;
