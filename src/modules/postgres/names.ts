import { boundedName, loginOfIdentity } from '../../domain/answers/login.js';
import { credentialTag } from '../../domain/secrets/credential-tag.js';

// What the PostgreSQL provider makes for one consumer, named from the consumer's identity
// `<node>-<module>` alone (the name of the file the mesh delivers its secret in), so that every
// pass, and the consumer's answers, derive the same names:
//
// - a database named for the consumer (the answers' `${consumer.name}`);
// - a group role that owns that database and everything in it, and cannot log in;
// - one login per credential the vault made for it, named for the credential (`${consumer.login}-<tag>`,
//   the tag a digest of the password, which the consumer's node derives the same way), each a member
//   of the group that acts as the group, so what it creates belongs to the group. Dropping a login —
//   a retired credential — never takes data with it (ADR 0114).

/** PostgreSQL keeps 63 bytes of a name and silently cuts the rest, so two long names could meet. */
const NAME_MAX = 63;

/** A credential the vault made for the consumer: the current one, or the second beside it while a rotation holds both. */
export type CredentialSlot = 'current' | 'next';

/** The file a credential is delivered in, beside the consumer's own: `<consumer>` and `<consumer>.next`. */
export const slotOfFile = (file: string): { consumer: string; slot: CredentialSlot } | undefined => {
  const match = /^([a-z0-9][a-z0-9-]*)(\.next)?$/.exec(file);
  if (!match?.[1]) return undefined;
  return { consumer: match[1], slot: match[2] ? 'next' : 'current' };
};

export const databaseOf = (consumer: string): string => boundedName(consumer, NAME_MAX);

/** The group role: the consumer's name and `/data`, which no login the mesh derives can be (a login has no `/`). */
export const groupRoleOf = (consumer: string): string => `${boundedName(consumer, NAME_MAX - '/data'.length)}/data`;

/**
 * The login of one credential: `${consumer.login}-<tag of its password>`, what the consumer's
 * `${db.user}` says when it holds that credential — so through a rotation each side names the
 * login of the value it holds, and retiring the old value changes no name.
 */
export const loginOf = (consumer: string, password: string): string => `${loginOfIdentity(consumer)}-${credentialTag(password)}`;

/** Comments on the roles the provider made, so it finds them again and never touches another role. */
export const GROUP_COMMENT = 'mesh consumer data: ';
export const LOGIN_COMMENT = 'mesh consumer login: ';
