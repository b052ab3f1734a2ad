import { join } from 'node:path';
import { createOperatorKey } from '../adapters/operator-keys.js';
import { devStackDir } from '../config.js';
import { printResult, withMesh } from './mesh-session.js';
import { output, table } from './output.js';
import { atLeastFlag, withReads } from './reads.js';
import { readOperators } from '../projections/mesh/operators.js';

// mesh operator key NAME [--out FILE] | add NAME --key PUBLIC-KEY | revoke NAME | list
//
// A new operator makes their own key (`key`), keeps the file, and hands the public half to an
// operator who adds them; from then on their commands are signed with it and told apart.


export const operatorKey = async (name: string, values: { json?: true; out?: string }): Promise<number> => {
  const out = output(values.json ?? false);
  const file = values.out ?? join(devStackDir(), 'operators', `${name}.key`);
  const key = createOperatorKey(file, name);
  if (out.json) out.data({ ok: true, operator: name, publicKey: key.publicKey, file });
  else {
    out.line(key.publicKey);
    process.stderr.write(`signing key for ${name} written to ${file} (readable by you alone). An operator adds you with:\n  npx mesh operator add ${name} --key ${key.publicKey}\nthen sign with it: MESH_OPERATOR_KEY=${file}\n`);
  }
  return 0;
};

export const operatorAdd = (name: string, values: { json?: true; key: string; commandId?: string; plan?: true }): Promise<number> =>
  withMesh(async ({ mesh, metadata }) => printResult(output(values.json ?? false), await mesh.execute({ type: 'add-operator', operator: name, publicKey: values.key }, metadata(values.commandId))), { plan: values.plan });

export const operatorRevoke = (name: string, values: { json?: true; commandId?: string; plan?: true }): Promise<number> =>
  withMesh(async ({ mesh, metadata }) => printResult(output(values.json ?? false), await mesh.execute({ type: 'revoke-operator', operator: name }, metadata(values.commandId))), { plan: values.plan });

export const operatorList = (values: { json?: true; atLeast?: string; output?: string }): Promise<number> => {
  const out = output(values.json ?? false, values.output);
  return withReads(['operators'], { atLeast: atLeastFlag(values.atLeast) }, async (session) => {
    const operators = (await readOperators(session)).sort((a, b) => (a.operator < b.operator ? -1 : 1));
    if (out.json) out.data(operators);
    else table(out, ['OPERATOR', 'STATE', 'PUBLIC KEY'], operators.map((o) => [o.operator, o.revoked ? 'revoked' : 'active', o.publicKey]));
    return 0;
  });
};
