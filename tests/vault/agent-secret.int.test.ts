import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { hostKey, nodeIdentity } from '../../src/adapters/enrolment-client.js';
import { newIdentity } from '../../src/adapters/identity.js';
import { makeSecret } from '../../src/adapters/vault-client.js';
import type { Resource } from '../../src/domain/declarations/declaration.js';
import type { Report } from '../../src/domain/reports/report.js';
import { assignment, openAgentTest, processResource, type AgentTest } from '../agent/harness.js';
import { openTestVault } from '../helpers/vault.js';

// An agent applying a declared secret: it asks the vault at apply time, holds what needs the
// secret (saying why) while no vault answers or the vault does not name this node, then writes
// the value 0600, owned by the user it runs modules as, starts what reads it — with nothing of it
// in that process's environment — and removes the file when the secret is undeclared.

describe('an agent fetching a secret from the vault', () => {
  let t: AgentTest;
  let vault: ReturnType<typeof openTestVault> | undefined;
  const controller = newIdentity();
  afterEach(async () => {
    vault?.remove();
    vault = undefined;
    await t?.cleanup();
  });

  const outcomeOf = (report: Report, key: string) => report.resources.find((r) => r.key === key);
  const declared = (path: string) => {
    const secret: Resource = { key: 'app/secret-token', module: 'app', kind: 'secret', secret: 'app-token', path, owner: null, vault: { node: 'alpha', module: 'vault' } };
    // reads the secret from its file, as a module does, then stays up
    const server = processResource('app', 'server', ['sh', '-c', 'cat "$0" > /dev/null && exec sleep 300', path], { after: ['app/secret-token'], restartOn: ['app/secret-token'] });
    return assignment('app', [secret, server]);
  };
  const make = (recipients: { node: string; signingKey: string; sealingKey: string }[]) =>
    makeSecret(t.nc, { prefix: t.names.prefix, controller, secret: 'app-token', purpose: 'token of app', version: 1, recipients });
  const thisNode = () => ({ node: t.node, signingKey: hostKey(t.stateDir).publicKey, sealingKey: nodeIdentity(t.stateDir).publicKey });

  it('holds while no vault answers, then writes the value 0600 and starts what reads it, with no secret in its environment', async () => {
    t = await openAgentTest();
    const path = join(t.root, 'node', '.mesh', 'app', 'secrets', 'token');
    await t.publish(t.declaration(1, [declared(path)]));
    await t.startAgent();
    const waiting = await t.reportWhere('the secret held', (r) => outcomeOf(r, 'app/secret-token')?.outcome === 'held');
    expect(outcomeOf(waiting, 'app/secret-token')?.reason).toMatch(/^waiting for the vault to deliver app-token: no vault answered/);
    expect(outcomeOf(waiting, 'app/server')?.outcome).toBe('held');
    expect(existsSync(path)).toBe(false);

    vault = openTestVault(t.nc, { prefix: t.names.prefix, controllerKey: controller.publicKey });
    await make([thisNode()]);
    await t.reportWhere('the app running', (r) => r.running.some((m) => m.module === 'app'));
    const value = readFileSync(path, 'utf8');
    expect(value.length).toBeGreaterThanOrEqual(40);
    const file = statSync(path);
    expect(file.mode & 0o777).toBe(0o600);
    expect(file.uid).toBe(process.getuid?.());
    const pid = await t.runningPid('app/server');
    expect(readFileSync(`/proc/${pid}/environ`, 'utf8')).not.toContain(value);

    // undeclared, the file goes with it
    await t.publish(t.declaration(2, []));
    await t.reportWhere('the app gone', (r) => r.running.length === 0 && r.sequence === 2);
    expect(existsSync(path)).toBe(false);
  });

  it('holds, naming the vault’s reason, while the secret does not name this node', async () => {
    t = await openAgentTest();
    vault = openTestVault(t.nc, { prefix: t.names.prefix, controllerKey: controller.publicKey });
    const other = newIdentity();
    await make([{ node: 'elsewhere', signingKey: other.publicKey, sealingKey: thisNode().sealingKey }]);
    const path = join(t.root, 'node', '.mesh', 'app', 'secrets', 'token');
    await t.publish(t.declaration(1, [declared(path)]));
    await t.startAgent();
    const waiting = await t.reportWhere('the secret held', (r) => outcomeOf(r, 'app/secret-token')?.outcome === 'held');
    expect(outcomeOf(waiting, 'app/secret-token')?.reason).toContain(`node ${t.node} is not a recipient of app-token (it goes to elsewhere)`);
    expect(existsSync(path)).toBe(false);
    // once the controller names it, the next pass delivers
    await make([thisNode()]);
    await t.reportWhere('the app running', (r) => r.running.some((m) => m.module === 'app'));
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });
});
