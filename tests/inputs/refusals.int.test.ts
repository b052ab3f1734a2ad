import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sendSignedCommand } from '../../src/adapters/command-client.js';
import { loadOperatorKey, signCommand } from '../../src/adapters/operator-keys.js';
import { meshHome } from '../../src/config.js';
import { CommandDispatcher } from '../../src/controller/command-dispatcher.js';
import { MeshService } from '../../src/controller/mesh-service.js';
import { MeshError } from '../../src/errors.js';
import { operatorCli } from '../helpers/cli.js';
import { minimalModule } from '../helpers/given.js';
import { testNatsUrl } from '../helpers/log.js';
import { uniqueName } from '../helpers/names.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';

// Each bad value an operator can send, through the CLI against the real servers: refused with the
// field, the value, why and the remedy, a non-zero exit, no stack trace, and nothing appended.

describe('values are checked where they enter, and a refusal appends nothing', () => {
  let t: TestMesh;
  let env: Record<string, string>;
  const dir = join(meshHome(), 'tmp', uniqueName('inputs-'));
  const head = async (): Promise<number> => (await t.jsm.streams.info(t.names.logStream)).state.last_seq;
  /** A refusal: the exit code, the message, no stack trace, and the log where it was. */
  const { mesh, manifestFile, refused } = operatorCli(() => ({ env, logHead: head }), dir);

  beforeAll(async () => {
    mkdirSync(dir, { recursive: true });
    t = await openTestMesh();
    env = { ...(await t.operatorCommands()), MESH_NATS_URL: testNatsUrl() };
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([-1, 0, 1.5, 70_000, 1e30])('refuses a manifest whose port default is %p, naming the field and the range', async (value) => {
    const name = uniqueName('web');
    const manifest = minimalModule(name, { requires: [{ name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' }, { name: 'listen', contract: 'value', provider: 'operator', type: 'port', default: value }] });
    const stderr = await refused(['module', 'register', manifestFile(manifest)], 3);
    expect(stderr).toContain(`requires.1.default: ${JSON.stringify(value)} is not a port: a whole number from 1 to 65535`);
    expect(stderr).toMatch(/--set listen=VALUE/);
  });

  it('refuses 300-character module, node and seat names, saying the limit and why', async () => {
    const long = `x${'y'.repeat(299)}`;
    const moduleRefusal = await refused(['module', 'register', manifestFile(minimalModule(long, { seats: [{ name: long, scope: 'mesh' }] }))], 3);
    expect(moduleRefusal).toMatch(/name: a module name is at most 31 characters, and "xy+…" has 300: .*<node>-<module>.*PostgreSQL identifier and a DNS label \(63 bytes\)/);
    expect(moduleRefusal).toMatch(/seats\.0\.name: a seat name is at most 31 characters/);
    expect(await refused(['node', 'add', long], 3)).toMatch(/a node name is at most 31 characters, and "xy+…" has 300/);
    expect(await refused(['node', 'token', '--node', long], 3)).toMatch(/--node: a node name is at most 31 characters/);
    expect(await refused(['seat', 'rename', 'mesh-git', `mesh-${'g'.repeat(40)}`], 3)).toMatch(/a seat name is at most 31 characters/);
  });

  it('refuses a token TTL of no time or without bound, naming the bound', async () => {
    expect(await refused(['node', 'token', '--ttl', '0s'], 2)).toMatch(/--ttl "0s" is no time at all: a duration is positive; give one from 1s to 30d/);
    expect(await refused(['node', 'token', '--ttl', '99999999999999h'], 2)).toMatch(/--ttl "99999999999999h" is longer than 30d, the most it may be: a token is a way into the mesh/);
    expect(await refused(['node', 'token', '--ttl', 'soon'], 2)).toMatch(/not a duration like 30m/);
  });

  it('refuses a token whose expiry has passed or lies too far ahead by the controller\'s clock, however it was sent', async () => {
    const send = (expiresAt: string) =>
      sendSignedCommand(t.nc, { operatorKeyFile: env.MESH_OPERATOR_KEY as string, subjectPrefix: t.names.prefix }, { type: 'issue-enrolment-token', tokenId: '0123456789abcdef', verifier: 'f'.repeat(64), node: null, expiresAt }, uniqueName('c')).then(
        () => undefined,
        (error: unknown) => error,
      );
    const before = await head();
    const past = await send(new Date(Date.now() - 60_000).toISOString());
    expect(past).toBeInstanceOf(MeshError);
    expect((past as MeshError).message).toMatch(/which has passed .*it could never be spent/);
    const far = await send(new Date(Date.now() + 400 * 86_400_000).toISOString());
    expect((far as MeshError).message).toMatch(/more than 30d from now/);
    expect(await head()).toBe(before);
  });

  it('refuses a sequence beyond any the log can have, and 0', async () => {
    expect(await refused(['log', '--since', '99999999999999999999'], 2)).toMatch(/--since "99999999999999999999" is beyond any log sequence \(at most 9007199254740991/);
    expect(await refused(['log', '--since', '0'], 2)).toMatch(/log sequences begin at 1/);
    expect(await refused(['status', '--at-least', '99999999999999999999'], 2)).toMatch(/--at-least must be a log sequence/);
    expect(await refused(['log', 'void', '99999999999999999999', '--reason', 'x'], 2)).toMatch(/beyond any log sequence/);
  });

  it('refuses a command id reused for another command, naming the earlier command and its sequence; the same command again is answered as done', async () => {
    const id = uniqueName('cmd-');
    const [first, second] = [uniqueName('n'), uniqueName('n')];
    const added = await mesh('node', 'add', first, '--command-id', id, '--json');
    expect(added.code).toBe(0);
    const seq = (JSON.parse(added.stdout) as { seq: number }).seq;
    const stderr = await refused(['node', 'add', second, '--command-id', id], 3);
    expect(stderr).toContain(`--command-id ${id}: this command id was already used at log seq ${seq} by add-node from operator ada`);
    expect(stderr).toMatch(/it differs in command\.node.*so this one was not carried out; send it with a new command id/);
    const again = await mesh('node', 'add', first, '--command-id', id);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`command ${id} was already carried out at seq ${seq}`);
  });

  it('refuses a retried token command, saying its secret was shown once; it never prints a token the log does not hold', async () => {
    const id = uniqueName('token-');
    const made = await mesh('node', 'token', '--command-id', id, '--json');
    expect(made.code).toBe(0);
    const { tokenId, seq } = JSON.parse(made.stdout) as { tokenId: string; seq: number };
    const retried = await mesh('node', 'token', '--command-id', id, '--json');
    expect(retried.code).toBe(3);
    expect(retried.stdout).not.toMatch(/"token"/);
    expect(retried.stdout).toContain(`this command id already made enrolment token ${tokenId} at log seq ${seq}`);
    expect(retried.stdout).toMatch(/its secret was shown once/);
  });

  it('refuses a 5 MB manifest at once, naming the limit and what to shrink', async () => {
    const manifest = minimalModule(uniqueName('big'), { resources: { files: [{ name: 'blob', in: 'bus', as: 'blob.txt', template: 'x'.repeat(5_000_000) }] } });
    const started = Date.now();
    const stderr = await refused(['module', 'register', manifestFile(manifest)], 3);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(stderr).toMatch(/command\.manifest\.resources\.files\.0\.template: the register-module command is 4\.8 MiB signed, and a command is at most 504 KiB/);
    expect(stderr).toMatch(/its largest parts are manifest\.resources\.files\.0\.template \(4\.8 MiB\)/);
  });

  it('refuses a command over the limit where it enters the controller (the one entry of the tools and the HTTP API), and appends nothing', async () => {
    const dispatcher = new CommandDispatcher(new MeshService(t.newLog()), { maxPayload: t.nc.info?.max_payload ?? 1024 * 1024 });
    const manifest = minimalModule(uniqueName('big'), { description: 'd'.repeat(700_000) });
    const body = signCommand(loadOperatorKey(env.MESH_OPERATOR_KEY as string), uniqueName('c'), { type: 'register-module', manifest }, new Date());
    const before = await head();
    const error = await dispatcher.dispatch(body, 'register-module').then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({ code: 'refused', problems: [{ what: 'command.manifest.description', why: expect.stringMatching(/a command is at most 504 KiB/) }] });
    expect(await head()).toBe(before);
  });
});
