import { join } from 'node:path';
import { createOperatorKey } from '../adapters/operator-keys.js';
import { ValidationError } from '../errors.js';
import { devStackDir } from '../config.js';
import { printResult, withMesh } from './mesh-session.js';
import { output, table } from './output.js';
import { atLeastFlag, withReads } from './reads.js';
import { parseDuration } from '../domain/limits.js';
import { COMMAND_WINDOW_BOUNDS } from '../domain/operators/command-window.js';
import { readOperators } from '../projections/mesh/operators.js';

// mesh operator key NAME [--out FILE] | add NAME --key PUBLIC-KEY | revoke NAME | list | window DURATION
//
// A new operator makes their own key (`key`), keeps the file, and hands the public half to an
// operator who adds them; from then on their commands are signed with it and told apart. Each
// command is good only within the mesh's window of the controller's clock (`window`, recorded in
// the log: every controller judges by the same).

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

export const operatorWindow = (duration: string, values: { json?: true; commandId?: string; plan?: true }): Promise<number> => {
  const parsed = parseDuration(duration, { ms: COMMAND_WINDOW_BOUNDS.maxSeconds * 1000, written: '1h', why: 'a captured command would stay good too long' });
  const why = 'why' in parsed ? parsed.why : parsed.ms < COMMAND_WINDOW_BOUNDS.minSeconds * 1000 ? `"${duration}" is shorter than 30s, the least it may be: a command could lapse on its way` : undefined;
  if (why !== undefined || 'why' in parsed) throw new ValidationError(`the window ${why ?? ''}; give one from ${COMMAND_WINDOW_BOUNDS.written}`, { field: 'duration', value: duration });
  const ms = parsed.ms;
  return withMesh(async ({ mesh, metadata }) => printResult(output(values.json ?? false), await mesh.execute({ type: 'set-command-window', seconds: ms / 1000 }, metadata(values.commandId))), { plan: values.plan });
};

export const operatorList = (values: { json?: true; atLeast?: string; output?: string }): Promise<number> => {
  const out = output(values.json ?? false, values.output);
  return withReads(['operators'], { atLeast: atLeastFlag(values.atLeast) }, async (session) => {
    const operators = (await readOperators(session)).sort((a, b) => (a.operator < b.operator ? -1 : 1));
    if (out.json) out.data(operators);
    else table(out, ['OPERATOR', 'STATE', 'PUBLIC KEY'], operators.map((o) => [o.operator, o.revoked ? 'revoked' : 'active', o.publicKey]));
    return 0;
  });
};
