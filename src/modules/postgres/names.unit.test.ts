import { describe, expect, it } from '@jest/globals';
import { credentialTag } from '../../domain/secrets/credential-tag.js';
import { databaseOf, groupRoleOf, loginOf, slotOfFile } from './names.js';
import { scramVerifier, verifies } from './scram.js';

// What the PostgreSQL provider names for a consumer, from the name of the file its credential is
// delivered in, and the verifier it gives PostgreSQL instead of the password.

describe('the names of what a consumer is given', () => {
  it('reads a credential file as the consumer and the credential it holds', () => {
    expect(slotOfFile('beta-guestbook')).toEqual({ consumer: 'beta-guestbook', slot: 'current' });
    expect(slotOfFile('beta-guestbook.next')).toEqual({ consumer: 'beta-guestbook', slot: 'next' });
    // what the agent writes beside it while placing it, or anything else, is no credential
    expect(slotOfFile('.beta-guestbook.tmp')).toBeUndefined();
    expect(slotOfFile('beta-guestbook.old')).toBeUndefined();
  });

  it('names the database for the consumer, a group role no login can be, and a login per credential as the answers do', () => {
    expect(databaseOf('beta-guestbook')).toBe('beta-guestbook');
    expect(groupRoleOf('beta-guestbook')).toBe('beta-guestbook/data');
    // a login per credential, named for it: two values, two logins; the same value, the same login
    const tag = credentialTag('a-credential');
    expect(tag).toMatch(/^[0-9a-f]{8}$/);
    expect(loginOf('beta-guestbook', 'a-credential')).toBe(`beta-guestbook-${tag}`);
    expect(loginOf('beta-guestbook', 'another-credential')).not.toBe(loginOf('beta-guestbook', 'a-credential'));
    // the file's trailing newline is not part of the credential
    expect(loginOf('beta-guestbook', 'a-credential\n')).toBe(`beta-guestbook-${tag}`);
    // a long identity: the login is `${consumer.login}` (20 characters) and its tag, within PostgreSQL's 63
    const long = `${'n'.repeat(31)}-${'m'.repeat(31)}`;
    expect(loginOf(long, 'a-credential')).toHaveLength(29);
    expect(groupRoleOf(long).length).toBeLessThanOrEqual(63);
    expect(groupRoleOf(long)).not.toBe(groupRoleOf(`${'n'.repeat(31)}-${'m'.repeat(30)}x`));
  });
});

describe('a SCRAM-SHA-256 verifier', () => {
  it('is the one RFC 7677 gives for its example', () => {
    expect(scramVerifier('pencil', Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'))).toBe(
      'SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=',
    );
  });

  it('verifies its own password and no other, and nothing that is not a verifier', () => {
    const verifier = scramVerifier('a-credential');
    expect(verifies('a-credential', verifier)).toBe(true);
    expect(verifies('another', verifier)).toBe(false);
    expect(verifies('a-credential', 'md5d41d8cd98f00b204e9800998ecf8427e')).toBe(false);
    expect(verifies('a-credential', null)).toBe(false);
  });
});
