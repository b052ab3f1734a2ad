import { ValidationError } from '../errors.js';
import { parseFlags } from './flags.js';
import { printResult, withMesh } from './mesh-session.js';
import { output } from './output.js';

// mesh node add NAME [--root PATH] | list

export const nodeCommand = async (args: string[]): Promise<number> => {
  const { values, positionals } = parseFlags(args, { json: { type: 'boolean', default: false }, root: { type: 'string' }, 'command-id': { type: 'string' } }, 2);
  const out = output(values.json ?? false);
  const [sub, name] = positionals;
  switch (sub) {
    case 'add':
      if (!name) throw new ValidationError('usage: mesh node add NAME [--root PATH]', { field: 'node' });
      return withMesh(async ({ mesh, metadata }) =>
        printResult(out, await mesh.execute({ type: 'add-node', node: name, ...(values.root ? { root: values.root } : {}) }, metadata(values['command-id']))),
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
    default:
      throw new ValidationError(`mesh node needs one of: add, list (got ${sub ?? 'nothing'})`, { field: 'verb' });
  }
};
