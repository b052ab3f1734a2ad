import { randomBytes } from 'node:crypto';
import { machineOverview } from './machine-overview.js';
import { NotFoundError, RefusedError, ValidationError } from '../errors.js';
import { tokenVerifier } from '../domain/nodes/enrolment.js';
import { TOKEN_TTL_MAX } from '../domain/nodes/token-limits.js';
import { durationFlag, parseFlags } from './flags.js';
import { printResult, withMesh } from './mesh-session.js';
import { output } from './output.js';
import { atLeastFlag, withReads } from './reads.js';
import { assignmentsOf } from '../projections/mesh/assignments.js';
import { lastFactsOf } from '../projections/mesh/facts.js';
import { readNodeHolds } from '../projections/mesh/holds.js';
import { nodeNames, readNode, readNodesWithModules } from '../projections/mesh/nodes.js';
import { OVERVIEW_PROJECTIONS } from '../projections/mesh/overview.js';
import { holdingsOf } from '../projections/mesh/seats.js';

// mesh node add NAME [--root PATH] [--address HOST] | list | token [--node NAME] [--ttl 1h]

export const nodeCommand = async (args: string[]): Promise<number> => {
  const { values, positionals } = parseFlags(
    args,
    { json: { type: 'boolean', default: false }, 'at-least': { type: 'string' }, root: { type: 'string' }, address: { type: 'string' }, node: { type: 'string' }, ttl: { type: 'string', default: '1h' }, 'command-id': { type: 'string' } },
    2,
  );
  const out = output(values.json ?? false);
  const [sub, name] = positionals;
  switch (sub) {
    case 'add':
      if (!name) throw new ValidationError('usage: mesh node add NAME [--root PATH]', { field: 'node' });
      return withMesh(async ({ mesh, metadata }) =>
        printResult(
          out,
          await mesh.execute({ type: 'add-node', node: name, ...(values.root ? { root: values.root } : {}), ...(values.address ? { address: values.address } : {}) }, metadata(values['command-id'])),
        ),
      );
    case 'list':
      return withReads(['nodes', 'assignments'], { atLeast: atLeastFlag(values['at-least']) }, async (session) => {
        const rows = await readNodesWithModules(session, { assignments: true });
        if (out.json) out.data(rows.map((n) => ({ node: n.name, root: n.root, modules: n.modules })));
        else for (const n of rows) out.line(`${n.name.padEnd(20)} ${n.root.padEnd(20)} ${n.modules.join(', ') || '(nothing assigned)'}`);
        return 0;
      });
    case 'show':
      if (!name) throw new ValidationError('usage: mesh node show NAME', { field: 'node' });
      return withReads([...new Set([...OVERVIEW_PROJECTIONS, 'facts'])], { atLeast: atLeastFlag(values['at-least']) }, async (session) => {
        const node = await readNode(session, name);
        if (!node) {
          const known = await nodeNames(session);
          throw new NotFoundError(`no node ${name} in the mesh (nodes: ${known.join(', ') || 'none'})`, { node: name });
        }
        const assignments = await assignmentsOf(session, name);
        const seats = await holdingsOf(session, name);
        const facts = await lastFactsOf(session, name, 10);
        // What the node holds and why, as the facts stated it (the holds projection), not the report re-read.
        const held = await readNodeHolds(session, name);
        const shown = {
          node: node.name,
          root: node.root,
          address: node.address,
          enrolled: node.public_key !== null,
          ...(node.enrolled_at ? { enrolledAt: new Date(node.enrolled_at).toISOString() } : {}),
          assignments: assignments.map((a) => ({ module: a.module, definitionVersion: a.definition_version })),
          seats: seats.map((h) => ({ seat: h.seat, module: h.module })),
          held: held.map(({ module, resource, kind, reason, since }) => ({ module, resource, kind, reason, since })),
          lastFacts: facts.map((f) => ({ seq: Number(f.seq), type: f.type, module: f.module, time: new Date(f.time).toISOString(), data: f.data })),
          // What the machine itself last said: heard when, running what, what is not as told.
          machine: (await machineOverview(session)).nodes.find((m) => m.node === node.name) ?? null,
        };
        if (out.json) {
          out.data(shown);
          return 0;
        }
        out.line(`node ${shown.node}: root ${shown.root}${shown.address ? `, reached at ${shown.address}` : ''}, ${shown.enrolled ? `enrolled${shown.enrolledAt ? ` at ${shown.enrolledAt}` : ''}` : 'not enrolled (no agent has joined as it)'}`);
        out.line(`runs: ${shown.assignments.map((a) => `${a.module} (definition v${a.definitionVersion})`).join(', ') || 'nothing'}`);
        out.line(`holds: ${shown.seats.map((h) => `${h.seat} (by ${h.module})`).join(', ') || 'no seat'}`);
        const machine = shown.machine;
        const never = machine?.statusUnknown ? `not known (${machine.statusUnknown})` : 'never';
        out.line(`last heard: ${machine?.lastHeard ?? never}; last report: ${machine?.lastReport ?? never}; declaration ${machine?.appliedSequence ?? '–'} applied of ${machine?.declaredSequence ?? '–'}`);
        out.line(`running now: ${machine?.running.map((r) => `${r.module} (definition v${r.definitionVersion})`).join(', ') || 'nothing reported'}`);
        out.line(shown.held.length > 0 ? `held (${shown.held.length}):` : 'held: nothing');
        for (const module of [...new Set(shown.held.map((h) => h.module))]) {
          const of = shown.held.filter((h) => h.module === module);
          out.line(`  ${module}: ${of.length} held`);
          for (const h of of) out.line(`    ${h.resource} (${h.kind}): ${h.reason ?? 'no reason given'} — since ${h.since.time} (log seq ${h.since.seq})`);
        }
        for (const problem of machine?.problems ?? []) out.line(`not as told: ${problem}`);
        out.line(shown.lastFacts.length > 0 ? 'last facts:' : 'no facts stated about it yet');
        for (const f of shown.lastFacts) out.line(`  ${String(f.seq).padEnd(8)} ${f.time}  ${f.type}${f.module ? ` ${f.module}` : ''}`);
        return 0;
      });
    case 'token': {
      // The secret is shown here once; the log keeps only its hash.
      const tokenId = randomBytes(8).toString('hex');
      const secret = randomBytes(24).toString('base64url');
      const expiresAt = new Date(Date.now() + durationFlag('--ttl', values.ttl ?? '1h', TOKEN_TTL_MAX)).toISOString();
      return withMesh(async ({ mesh, metadata }) => {
        const meta = metadata(values['command-id']);
        const result = await mesh.execute({ type: 'issue-enrolment-token', tokenId, verifier: tokenVerifier(secret), node: values.node ?? null, expiresAt }, meta);
        // The token printed is the one recorded: a duplicate answer recorded another (command-reuse.ts refuses that case, naming it).
        if (result.duplicate) throw new RefusedError(`command ${meta.commandId} had already made a token at log seq ${result.seq}; its secret was shown once and cannot be shown again: make a new token without --command-id`, { field: '--command-id', seq: result.seq });
        const token = `${tokenId}.${secret}`;
        if (out.json) out.data({ ok: true, token, tokenId, node: values.node ?? null, expiresAt, seq: result.seq });
        else {
          out.line(token);
          process.stderr.write(`${result.summary}. Start the node's agent with: npx mesh agent --node ${values.node ?? 'NAME'} --token ${token}\n`);
        }
        return 0;
      });
    }
    default:
      throw new ValidationError(`mesh node needs one of: add, list, show, token (got ${sub ?? 'nothing'})`, { field: 'verb' });
  }
};
