import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runMesh } from '../helpers/cli.js';
import { fixtureManifest } from '../helpers/given.js';
import { uniqueName } from '../helpers/names.js';
import { handBackAsked, routedModule } from '../helpers/routes.js';
import { openTestMesh, type TestMesh } from '../helpers/test-mesh.js';
import { dropSchemas, freshSchemas, openPool } from '../projections/harness.js';

// `mesh node cordon|uncordon|remove [--drain]` as an operator runs them: child processes against
// a controller that decides each command, the projections answering what they show.

const json = (stdout: string): Record<string, unknown>[] => stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);

describe('cordoning and removing a node', () => {
  let t: TestMesh;
  let env: Record<string, string>;
  const schemas = freshSchemas();
  const pool = openPool();
  const mesh = (...args: string[]) => runMesh(args, env);
  const [bus, lab, other] = [uniqueName('bus-'), uniqueName('lab-'), uniqueName('other-')];

  beforeAll(async () => {
    t = await openTestMesh();
    env = await t.startControlPlane(schemas);
    for (const module of ['local-bus', 'greeter', 'caller']) await t.run({ type: 'register-module', manifest: fixtureManifest(module) });
    for (const node of [bus, lab, other]) await t.run({ type: 'add-node', node });
    const assign = (module: string, node: string, hold: string[] = []) => t.run({ type: 'assign', module, node, hold, pins: {}, values: {}, placements: {} });
    await assign('local-bus', bus, ['mesh-broker']);
    // On lab: the greeter, and a caller answered by it (so the caller must go first).
    await assign('greeter', lab, ['front-desk']);
    await assign('caller', lab);
  });

  afterAll(async () => {
    await t.close();
    await dropSchemas(pool, schemas);
    await pool.end();
  });

  it('refuses to remove a node while modules are assigned to it, naming each, and changes nothing', async () => {
    const refused = await mesh('node', 'remove', lab);
    expect({ code: refused.code, stderr: refused.stderr }).toMatchObject({ code: 3, stderr: expect.stringContaining(`removing node ${lab} refused`) });
    expect(refused.stderr).toContain(`${lab}/greeter: greeter is still assigned to ${lab}`);
    expect(refused.stderr).toContain(`${lab}/caller: caller is still assigned to ${lab}`);
    expect(refused.stderr).toContain('--drain');
    const listed = json((await mesh('node', 'list', '--json')).stdout)[0] as unknown as { node: string }[];
    expect(listed.map((n) => n.node)).toContain(lab);
  });

  it('cordons a node: assigning to it is refused naming the cordon, what runs stays, and node show, node list and status say so', async () => {
    const cordoned = await mesh('node', 'cordon', lab, '--json');
    expect(cordoned.code).toBe(0);
    expect(json(cordoned.stdout)[0]).toMatchObject({ ok: true, events: [expect.objectContaining({ type: 'node.cordoned' })] });
    const again = await mesh('node', 'cordon', lab);
    expect({ code: again.code, stdout: again.stdout }).toMatchObject({ code: 0, stdout: `node ${lab} is already cordoned\n` });

    const assign = await mesh('assign', 'local-bus', lab, '--json');
    expect(assign.code).toBe(3);
    expect(json(assign.stdout)[0]).toMatchObject({ ok: false, refused: [{ what: lab, why: expect.stringContaining(`node ${lab} is cordoned`) as unknown, remedy: expect.stringContaining(`mesh node uncordon ${lab}`) as unknown }], error: { code: 'refused' } });

    const show = await mesh('node', 'show', lab);
    expect(show.stdout).toContain(`cordoned: it takes no new assignment; what it runs keeps running (mesh node uncordon ${lab})`);
    expect(show.stdout).toContain('runs: caller (definition v1), greeter (definition v1)');
    expect((await mesh('node', 'list')).stdout).toMatch(new RegExp(`^${lab}\\s+cordoned\\s`, 'm'));
    const status = await mesh('status');
    expect(status.stdout).toMatch(new RegExp(`^ {2}${lab}\\s+not enrolled\\s+cordoned\\s+caller, greeter$`, 'm'));
    expect((json((await mesh('status', '--json')).stdout)[0] as { nodes: { node: string; cordoned: boolean }[] }).nodes.find((n) => n.node === lab)).toMatchObject({ cordoned: true });

    // Uncordoned, it takes assignments again; cordoned once more for what follows.
    expect((await mesh('node', 'uncordon', lab)).code).toBe(0);
    expect((await mesh('node', 'show', lab)).stdout).not.toContain('cordoned:');
    expect((await mesh('node', 'cordon', lab)).code).toBe(0);
  });

  it('refuses a drain that would take away what another node is answered by, naming it; the node stays', async () => {
    const assigned = await mesh('assign', 'caller', other);
    expect(assigned.code).toBe(0);
    const refused = await mesh('node', 'remove', lab, '--drain');
    expect({ code: refused.code, stderr: refused.stderr }).toMatchObject({ code: 3, stderr: expect.stringContaining(`draining node ${lab} refused`) });
    expect(refused.stderr).toContain(`${other}/caller: it is answered by ${lab}/greeter`);
    // What could go went, each its own event; the node and the greeter stay.
    expect(json((await mesh('history', `${lab}/caller`, '--json')).stdout).map((e) => e.type)).toEqual(['assignment.created', 'assignment.removed']);
    expect((await mesh('node', 'show', lab)).stdout).toContain('runs: greeter (definition v1)');
    expect((await mesh('unassign', 'caller', other)).code).toBe(0);
  });

  it('shows a node\'s public domain and the public names its modules serve, now and as of a sequence', async () => {
    const before = await mesh('node', 'show', other);
    expect(before.stdout).toContain(`public domain: none, so no route has a public name here (mesh node domain ${other} D)`);
    await t.run({ type: 'register-module', manifest: { name: 'test-proxy', provides: [{ provision: 'route' }], canHold: ['mesh-proxy'] } });
    await t.run({ type: 'register-module', manifest: routedModule('shop', { route: 'shop', policy: [{ kind: 'redirect', from: 'www' }] }) });
    await t.run({ type: 'assign', module: 'test-proxy', node: bus, hold: ['mesh-proxy'], pins: {}, values: {}, placements: {} });
    const domainSet = await t.run({ type: 'set-node-domain', node: other, domain: 'other.example' });
    await t.run({ type: 'assign', module: 'shop', node: other, hold: [], pins: {}, values: {}, placements: {} });
    // Asked, not yet handed back: nothing served.
    expect((await mesh('node', 'show', other)).stdout).toContain('public domain: other.example; public names it serves: none');
    t.startProviderAnswers();
    expect(await handBackAsked(t, { node: bus, module: 'test-proxy' })).toMatchObject([{ ok: true }, { ok: true }]);

    const show = await mesh('node', 'show', other);
    // A person's line wraps at 100 columns, continued indented.
    expect(show.stdout.replace(/\n\s+/g, ' ')).toContain('public domain: other.example; public names it serves: shop.other.example (shop, route shop), www.other.example (shop, redirect to route shop)');
    expect(json((await mesh('node', 'show', other, '--json')).stdout)[0]).toMatchObject({
      publicDomain: 'other.example',
      publicNames: [
        { publicName: 'shop.other.example', module: 'shop', route: 'shop', redirect: false },
        { publicName: 'www.other.example', module: 'shop', route: 'shop', redirect: true },
      ],
    });
    // As of the domain's own commit: the domain, and nothing granted yet.
    const then = await mesh('node', 'show', other, '--at', String(domainSet.seq));
    expect(then.stdout).toContain('public domain: other.example; public names it serves: none');
    expect(json((await mesh('node', 'show', other, '--json', '--at', String(domainSet.seq))).stdout)[0]).toMatchObject({ publicDomain: 'other.example', publicNames: [] });
    await t.run({ type: 'unassign', module: 'shop', node: other });
  });

  it('drains and removes a node: each unassignment an event, then the removal; it is gone from the mesh, its record kept', async () => {
    const drained = await mesh('node', 'remove', lab, '--drain', '--json', '--command-id', uniqueName('drain-'));
    expect({ code: drained.code, stderr: drained.stderr }).toMatchObject({ code: 0 });
    const steps = json(drained.stdout) as { summary: string; events: { type: string }[] }[];
    expect(steps.map((s) => s.events.map((e) => e.type))).toEqual([['assignment.removed', 'seat.released'], ['node.removed']]);
    expect(steps[1]?.summary).toContain(`node ${lab} removed`);

    const show = await mesh('node', 'show', lab);
    expect({ code: show.code, stdout: show.stdout }).toMatchObject({ code: 0, stdout: expect.stringMatching(new RegExp(`^node ${lab}: removed at log seq \\d+`)) });
    expect(json((await mesh('node', 'show', lab, '--json')).stdout)[0]).toMatchObject({ node: lab, removed: { seq: expect.any(Number) as unknown } });
    expect((await mesh('node', 'list')).stdout).not.toContain(lab);
    expect((await mesh('status')).stdout).not.toContain(lab);
    const history = json((await mesh('history', lab, '--json')).stdout).map((e) => e.type);
    expect(history).toEqual(expect.arrayContaining(['node.added', 'node.cordoned', 'node.uncordoned', 'node.removed']));

    // Gone: removing, cordoning or assigning to it again is not found; added again, it is a new machine.
    for (const args of [['node', 'remove', lab], ['node', 'cordon', lab], ['assign', 'local-bus', lab]]) {
      const result = await mesh(...args);
      expect({ args, code: result.code, stderr: result.stderr }).toMatchObject({ args, code: 5, stderr: expect.stringContaining(`${lab}: no such node`) });
    }
    expect((await mesh('node', 'add', lab)).code).toBe(0);
    expect((await mesh('node', 'list')).stdout).toMatch(new RegExp(`^${lab}\\s+ready\\s+/var/lib/mesh\\s+\\(nothing assigned\\)$`, 'm'));
  });
});
