import { randomBytes } from 'node:crypto';
import { ValidationError } from '../errors.js';
import { tokenVerifier } from '../domain/nodes/enrolment.js';
import { parseFlags } from './flags.js';
import { printResult, withMesh } from './mesh-session.js';
import { output } from './output.js';

// mesh node add NAME [--root PATH] [--address HOST] | list | token [--node NAME] [--ttl 1h]

const TTL = /^(\d+)([smhd])$/;
const ttlMillis = (ttl: string): number => {
  const match = TTL.exec(ttl);
  if (!match) throw new ValidationError(`--ttl "${ttl}" is not a duration like 30m, 12h or 7d`, { field: '--ttl' });
  return Number(match[1]) * { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 's' | 'm' | 'h' | 'd'];
};

export const nodeCommand = async (args: string[]): Promise<number> => {
  const { values, positionals } = parseFlags(
    args,
    { json: { type: 'boolean', default: false }, root: { type: 'string' }, address: { type: 'string' }, node: { type: 'string' }, ttl: { type: 'string', default: '1h' }, 'command-id': { type: 'string' } },
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
      return withMesh(async ({ mesh }) => {
        const state = await mesh.current();
        const nodes = [...state.nodes.values()].sort((a, b) => a.name.localeCompare(b.name));
        const runs = (node: string) => [...state.assignments.values()].filter((a) => a.node === node).map((a) => a.module).sort();
        if (out.json) out.data(nodes.map((n) => ({ node: n.name, root: n.root, modules: runs(n.name) })));
        else for (const n of nodes) out.line(`${n.name.padEnd(20)} ${n.root.padEnd(20)} ${runs(n.name).join(', ') || '(nothing assigned)'}`);
        return 0;
      });
    case 'token': {
      // The secret is shown here once; the log keeps only its hash.
      const tokenId = randomBytes(8).toString('hex');
      const secret = randomBytes(24).toString('base64url');
      const expiresAt = new Date(Date.now() + ttlMillis(values.ttl ?? '1h')).toISOString();
      return withMesh(async ({ mesh, metadata }) => {
        const result = await mesh.execute({ type: 'issue-enrolment-token', tokenId, verifier: tokenVerifier(secret), node: values.node ?? null, expiresAt }, metadata(values['command-id']));
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
      throw new ValidationError(`mesh node needs one of: add, list, token (got ${sub ?? 'nothing'})`, { field: 'verb' });
  }
};
