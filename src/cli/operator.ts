import { join } from 'node:path';
import { createOperatorKey } from '../adapters/operator-keys.js';
import { devStackDir } from '../config.js';
import { ValidationError } from '../errors.js';
import { parseFlags } from './flags.js';
import { printResult, withMesh } from './mesh-session.js';
import { output } from './output.js';
import { atLeastFlag, withReads } from './reads.js';
import { readOperators } from '../projections/mesh/operators.js';

// mesh operator key NAME [--out FILE] | add NAME --key PUBLIC-KEY | revoke NAME | list
//
// A new operator makes their own key (`key`), keeps the file, and hands the public half to an
// operator who adds them; from then on their commands are signed with it and told apart.

export const operatorCommand = async (args: string[]): Promise<number> => {
  const { values, positionals } = parseFlags(args, { json: { type: 'boolean', default: false }, 'at-least': { type: 'string' }, key: { type: 'string' }, out: { type: 'string' }, 'command-id': { type: 'string' } }, 2);
  const out = output(values.json ?? false);
  const [sub, name] = positionals;
  switch (sub) {
    case 'key': {
      if (!name) throw new ValidationError('usage: mesh operator key NAME [--out FILE]', { field: 'name' });
      const file = values.out ?? join(devStackDir(), 'operators', `${name}.key`);
      const key = createOperatorKey(file, name);
      if (out.json) out.data({ ok: true, operator: name, publicKey: key.publicKey, file });
      else {
        out.line(key.publicKey);
        process.stderr.write(`signing key for ${name} written to ${file} (readable by you alone). An operator adds you with:\n  npx mesh operator add ${name} --key ${key.publicKey}\nthen sign with it: MESH_OPERATOR_KEY=${file}\n`);
      }
      return 0;
    }
    case 'add': {
      if (!name || !values.key) throw new ValidationError('usage: mesh operator add NAME --key PUBLIC-KEY', { field: name ? '--key' : 'name' });
      const publicKey = values.key;
      return withMesh(async ({ mesh, metadata }) => printResult(out, await mesh.execute({ type: 'add-operator', operator: name, publicKey }, metadata(values['command-id']))));
    }
    case 'revoke':
      if (!name) throw new ValidationError('usage: mesh operator revoke NAME', { field: 'name' });
      return withMesh(async ({ mesh, metadata }) => printResult(out, await mesh.execute({ type: 'revoke-operator', operator: name }, metadata(values['command-id']))));
    case 'list':
      return withReads(['operators'], { atLeast: atLeastFlag(values['at-least']) }, async (session) => {
        const operators = (await readOperators(session)).sort((a, b) => (a.operator < b.operator ? -1 : 1));
        if (out.json) out.data(operators);
        else for (const o of operators) out.line(`${o.operator.padEnd(20)} ${o.revoked ? 'revoked' : 'active '} ${o.publicKey}`);
        return 0;
      });
    default:
      throw new ValidationError(`mesh operator needs one of: key, add, revoke, list (got ${sub ?? 'nothing'})`, { field: 'verb' });
  }
};
