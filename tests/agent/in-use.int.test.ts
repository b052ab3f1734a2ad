import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { credentialTag, inUsePath } from '../../src/domain/secrets/credential-tag.js';
import { assignment, directoryResource, fileResource, openAgentTest, processResource, type AgentTest } from './harness.js';

// A file its module confirms it works with (files[].confirmsUse: a password file it logged in
// with): the agent calls it applied, and the module running, only once the module wrote the tag of
// what the file now says beside it. A module that cannot work with it — a login refused — never
// says so, and a rotation's reader that never says so never confirms.

describe('a file its module says it works with', () => {
  let t: AgentTest;
  afterEach(async () => t?.cleanup());

  it('is held until the module names what the file says, whatever else it names, and then applied', async () => {
    t = await openAgentTest();
    const data = join(t.root, 'machine', 'app');
    const file = join(data, 'login');
    const content = 'db:5432:app:app-1234abcd:a-credential\n';
    await t.publish(t.declaration(1, [assignment('app', [directoryResource('app', 'data', data, '0700'), { ...fileResource('app', 'login', file, content, '0600'), awaitsUse: true }, processResource('app', 'server', ['sleep', '300'])])]));
    await t.startAgent();

    const waiting = await t.reportWhere('the login written, its use not said', (r) => r.sequence === 1 && r.resources.some((x) => x.key === 'app/login' && x.outcome === 'held'));
    expect(waiting.resources.find((x) => x.key === 'app/login')).toMatchObject({ outcome: 'held', reason: expect.stringContaining('waiting for app to say it works with it') });
    expect(waiting.running).toEqual([]);
    expect(await t.runningPid('app/server')).toBeGreaterThan(0);

    // another value's tag (the credential before a rotation) is not this one
    writeFileSync(inUsePath(file), `${credentialTag('db:5432:app:app-00000000:the-old-credential\n')}\n`);
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await t.reports()).filter((r) => r.sequence === 1).every((r) => r.running.length === 0)).toBe(true);

    writeFileSync(inUsePath(file), `${credentialTag(content)}\n`);
    const working = await t.reportWhere('the module running once it said so', (r) => r.sequence === 1 && r.running.some((m) => m.module === 'app'));
    expect(working.resources.find((x) => x.key === 'app/login')).toMatchObject({ outcome: 'applied' });

    // undeclared: the word goes with the file
    await t.publish(t.declaration(2, []));
    await t.reportWhere('the empty declaration applied', (r) => r.sequence === 2);
    expect(existsSync(inUsePath(file))).toBe(false);
  });
});
