import { machineOverview } from './machine-overview.js';
import { atFlag, withMeshAt } from './at.js';
import { NotFoundError, RefusedError } from '../errors.js';
import { TOKEN_TTL_MAX } from '../domain/nodes/token-limits.js';
import { durationFlag } from './flags.js';
import { output, proseLine, table } from './output.js';
import { atLeastFlag, withReads } from './reads.js';
import { assignmentsOf } from '../projections/mesh/assignments.js';
import { lastFactsOf } from '../projections/mesh/facts.js';
import { readNodeHolds } from '../projections/mesh/holds.js';
import { nodeNames, readNode, readNodesWithModules } from '../projections/mesh/nodes.js';
import { OVERVIEW_PROJECTIONS } from '../projections/mesh/overview.js';
import { holdingsOf } from '../projections/mesh/seats.js';
import { readPublicNamesOn } from '../projections/mesh/routes.js';
import { publicNamesLine } from './public-names.js';

// mesh node add NAME [--root PATH] [--address HOST] | list | show NAME | token [--node NAME] [--ttl 1h]
// mesh node cordon NAME | uncordon NAME | domain NAME DOMAIN | remove NAME [--drain]

interface CommandFlags {
  json?: true;
  commandId?: string;
  plan?: true;
}


// A command's machinery (signing, the mesh's commands) is loaded by the commands alone: `mesh node
// show` and `mesh node list` load none of it.
const session = () => import('./mesh-session.js');

export const nodeAdd = async (name: string, values: CommandFlags & { root?: string; address?: string }): Promise<number> => {
  const out = output(values.json ?? false);
  const { printResult, withMesh } = await session();
  return withMesh(async ({ mesh, metadata }) =>
    printResult(out, await mesh.execute({ type: 'add-node', node: name, ...(values.root ? { root: values.root } : {}), ...(values.address ? { address: values.address } : {}) }, metadata(values.commandId))),
    { plan: values.plan },
  );
};

export const nodeRemove = async (name: string, values: CommandFlags & { drain?: true }): Promise<number> => {
  const out = output(values.json ?? false);
  if (!values.drain) return (await session()).runCommand(out, { type: 'remove-node', node: name }, values.commandId, { plan: values.plan });
  return (await import('./node-remove.js')).drainAndRemove(out, name, values.commandId, { plan: values.plan });
};

export const nodeList = (values: { json?: true; atLeast?: string; output?: string }): Promise<number> => {
  const out = output(values.json ?? false, values.output);
  return withReads(['nodes', 'assignments'], { atLeast: atLeastFlag(values.atLeast) }, async (session) => {
    const rows = await readNodesWithModules(session, { assignments: true });
    if (out.json) out.data(rows.map((n) => ({ node: n.name, root: n.root, cordoned: n.cordoned, modules: n.modules })));
    else table(out, ['NODE', 'STATE', 'ROOT', 'MODULES'], rows.map((n) => [n.name, n.cordoned ? 'cordoned' : 'ready', n.root, n.modules.join(', ') || '(nothing assigned)']));
    return 0;
  });
};

export const nodeShow = (name: string, values: { json?: true; atLeast?: string; output?: string; at?: string }): Promise<number> => {
  const out = output(values.json ?? false, values.output);
  const at = atFlag(values.at);
  if (at) return withMeshAt(at, async (mesh) => (await import('./at-reads.js')).nodeShowAt(out, mesh, name));
  return withReads([...new Set([...OVERVIEW_PROJECTIONS, 'facts', 'routes'])], { atLeast: atLeastFlag(values.atLeast) }, async (session) => {
    const node = await readNode(session, name);
    if (!node) {
      const known = await nodeNames(session);
      throw new NotFoundError(`no node ${name} in the mesh (nodes: ${known.join(', ') || 'none'})`, { node: name });
    }
    if (node.removed_seq !== null) {
      const removedAt = node.removed_at ? new Date(node.removed_at).toISOString() : null;
      if (out.json) out.data({ node: node.name, removed: { seq: Number(node.removed_seq), time: removedAt } });
      else proseLine(out, `node ${node.name}: removed at log seq ${node.removed_seq}${removedAt ? ` (${removedAt})` : ''}; its bus identity and enrolment tokens were retired with it (mesh history node.${node.name} says more)`);
      return 0;
    }
    const assignments = await assignmentsOf(session, name);
    const seats = await holdingsOf(session, name);
    const facts = await lastFactsOf(session, name, 10);
    // What the node holds and why, as the facts stated it (the holds projection), not the report re-read.
    const held = await readNodeHolds(session, name);
    const served = await readPublicNamesOn(session, name);
    const shown = {
      node: node.name,
      root: node.root,
      address: node.address,
      enrolled: node.public_key !== null,
      cordoned: node.cordoned,
      ...(node.enrolled_at ? { enrolledAt: new Date(node.enrolled_at).toISOString() } : {}),
      assignments: assignments.map((a) => ({ module: a.module, definitionVersion: a.definition_version })),
      seats: seats.map((h) => ({ seat: h.seat, module: h.module })),
      publicDomain: served.domain,
      publicNames: served.names,
      held: held.map(({ module, resource, kind, reason, since }) => ({ module, resource, kind, reason, since })),
      lastFacts: facts.map((f) => ({ seq: Number(f.seq), type: f.type, module: f.module, time: new Date(f.time).toISOString(), data: f.data })),
      // What the machine itself last said: heard when, running what, what is not as told.
      machine: (await machineOverview(session, { node: node.name })).nodes.find((m) => m.node === node.name) ?? null,
    };
    if (out.json) {
      out.data(shown);
      return 0;
    }
    proseLine(out, `node ${shown.node}: root ${shown.root}${shown.address ? `, reached at ${shown.address}` : ''}, ${shown.enrolled ? `enrolled${shown.enrolledAt ? ` at ${shown.enrolledAt}` : ''}` : 'not enrolled (no agent has joined as it)'}`);
    if (shown.cordoned) proseLine(out, `cordoned: it takes no new assignment; what it runs keeps running (mesh node uncordon ${shown.node})`);
    proseLine(out, `runs: ${shown.assignments.map((a) => `${a.module} (definition v${a.definitionVersion})`).join(', ') || 'nothing'}`);
    proseLine(out, `seats it holds: ${shown.seats.map((h) => `${h.seat} (by ${h.module})`).join(', ') || 'none'}`);
    proseLine(out, publicNamesLine(shown.node, shown.publicDomain, shown.publicNames));
    const machine = shown.machine;
    const never = machine?.statusUnknown ? `not known (${machine.statusUnknown})` : 'never';
    proseLine(out, `last heard: ${machine?.lastHeard ?? never}; last report: ${machine?.lastReport ?? never}; declaration ${machine?.appliedSequence ?? '–'} applied of ${machine?.declaredSequence ?? '–'}`);
    proseLine(out, `running now: ${machine?.running.map((r) => `${r.module} (definition v${r.definitionVersion})`).join(', ') || 'nothing reported'}`);
    // Held back: resources the agent did not apply, waiting on something (a secret, a path), as it said why.
    proseLine(out, shown.held.length > 0 ? `held back (${shown.held.length}):` : 'held back: nothing');
    for (const module of [...new Set(shown.held.map((h) => h.module))]) {
      const of = shown.held.filter((h) => h.module === module);
      proseLine(out, `  ${module}: ${of.length} held`);
      for (const h of of) proseLine(out, `    ${h.resource} (${h.kind}): ${h.reason ?? 'no reason given'} — since ${h.since.time} (log seq ${h.since.seq})`);
    }
    for (const problem of machine?.problems ?? []) proseLine(out, `not as told: ${problem}`);
    proseLine(out, shown.lastFacts.length > 0 ? 'last facts:' : 'no facts stated about it yet');
    if (shown.lastFacts.length > 0) table(out, ['SEQ', 'TIME', 'FACT'], shown.lastFacts.map((f) => [String(f.seq), f.time, `${f.type}${f.module ? ` ${f.module}` : ''}`]), { indent: 2 });
    return 0;
  });
};

export const nodeToken = async (values: CommandFlags & { node?: string; ttl: string }): Promise<number> => {
  const out = output(values.json ?? false);
  const [{ printResult, withMesh }, { newEnrolmentToken }] = await Promise.all([session(), import('../adapters/enrolment-tokens.js')]);
  // The secret is shown here once; the log keeps only its hash, and the public half of the bus
  // identity it derives: the one user the server lets the joining machine in as.
  const { tokenId, token, verifier, publicKey } = newEnrolmentToken();
  const expiresAt = new Date(Date.now() + durationFlag('--ttl', values.ttl, TOKEN_TTL_MAX)).toISOString();
  return withMesh(async ({ mesh, metadata }) => {
    const meta = metadata(values.commandId);
    const result = await mesh.execute({ type: 'issue-enrolment-token', tokenId, verifier, publicKey, node: values.node ?? null, expiresAt }, meta);
    // A plan shows no token: none is made.
    if (result.plan) return printResult(out, result);
    // The token printed is the one recorded: a duplicate answer recorded another (command-reuse.ts refuses that case, naming it).
    if (result.duplicate) throw new RefusedError(`command ${meta.commandId} had already made a token at log seq ${result.seq}; its secret was shown once and cannot be shown again: make a new token without --command-id`, { field: '--command-id', seq: result.seq });
    if (out.json) out.data({ ok: true, token, tokenId, node: values.node ?? null, expiresAt, seq: result.seq });
    else {
      out.line(token);
      process.stderr.write(`${result.summary}. Start the node's agent with: MESH_ENROL_TOKEN=${token} npx mesh agent --node ${values.node ?? 'NAME'}\n`);
    }
    return 0;
  }, { plan: values.plan });
};

export const nodeCordon = async (name: string, values: CommandFlags): Promise<number> => (await session()).runCommand(output(values.json ?? false), { type: 'cordon-node', node: name }, values.commandId, { plan: values.plan });

export const nodeUncordon = async (name: string, values: CommandFlags): Promise<number> => (await session()).runCommand(output(values.json ?? false), { type: 'uncordon-node', node: name }, values.commandId, { plan: values.plan });

export const nodeDomain = async (name: string, domain: string, values: CommandFlags): Promise<number> =>
  (await session()).runCommand(output(values.json ?? false), { type: 'set-node-domain', node: name, domain }, values.commandId, { plan: values.plan });
