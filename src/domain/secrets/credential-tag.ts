import { createHash } from 'node:crypto';

// Which of a secret's values a party holds, without the value: 8 hex digits of a digest of it.
// A provider that keeps a login per credential names each login with the tag of its password
// (`${consumer.login}-<tag>`), and the consumer's node fills the same tag into what it presents
// (`${consumer.secret-tag}` in the provider's answers), so a consumer's user follows the credential
// it holds through a rotation and no version travels to either. 32 bits of a digest of a random
// value say nothing usable of it; they are in role names anyone logged in may list.

const TAG_LENGTH = 8;

export const credentialTag = (value: string): string => createHash('sha256').update('mesh credential tag\0').update(value.trim()).digest('hex').slice(0, TAG_LENGTH);

/**
 * Beside a credential a provider applies: the tags of the credentials it holds in force for that
 * consumer, one per line, written by the provider once each authenticates. The agent holds the
 * provider's copy of the secret until every value it placed is named there (`awaitsInForce`).
 */
export const inForcePath = (path: string): string => `${path}.in-force`;

/** What `.in-force` and `.in-use` say: a tag a line. */
export const tagLines = (tags: readonly string[]): string => tags.map((tag) => `${tag}\n`).join('');

export const readTagLines = (text: string): Set<string> => new Set(text.split('\n').map((line) => line.trim()).filter((line) => /^[0-9a-f]{8}$/.test(line)));

/**
 * Beside a file a module confirms it works with (`files[].confirmsUse`): the tag of the content it
 * last worked with, written by the module. The agent calls the file applied only once it names
 * what the file now says.
 */
export const inUsePath = (path: string): string => `${path}.in-use`;
