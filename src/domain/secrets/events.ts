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

export const secretEvents = [SecretMade, SecretShared] as const;

/** A secret's aggregate: its name's `/` as a subject token boundary (`postgres-database/lab1-gitea` → `secret.postgres-database.lab1-gitea`). */
export const secretAggregate = (name: string): string => `secret.${name.split('/').join('.')}`;
