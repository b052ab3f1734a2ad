import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { createOperatorKey, loadOperatorKey } from '../adapters/operator-keys.js';
import type { LogHold, MeshService } from '../controller/mesh-service.js';
import { operatorNamed } from '../domain/operators/state.js';

// Genesis makes the first operator: a signing key in a file only the user can read, and its public
// half in the log, appended by the controller's writer while no operator exists (the one operator
// `mesh audit verify` accepts without an operator's signature). Later operators are added by
// operators, with signed commands.

export const firstOperatorName = (): string => {
  try {
    return userInfo().username.toLowerCase().replace(/[^a-z0-9._-]/g, '-') || 'operator';
  } catch {
    return 'operator';
  }
};

export const ensureFirstOperator = async (mesh: MeshService, keyFile: string, name: string): Promise<{ name: string; file: string; created: boolean; held?: LogHold }> => {
  const created = !existsSync(keyFile);
  const key = created ? createOperatorKey(keyFile, name) : loadOperatorKey(keyFile);
  const { state, held } = await mesh.view();
  // A log held at a commit is not added to: the operators it already holds are who may void it.
  if (held) return { name: key.operator, file: keyFile, created, held };
  if (!operatorNamed(state.operators, key.operator)) {
    await mesh.execute({ type: 'add-operator', operator: key.operator, publicKey: key.publicKey }, { commandId: `genesis:operator:${key.operator}:${key.publicKey.slice(0, 16)}`, actor: 'genesis' });
  }
  return { name: key.operator, file: keyFile, created };
};
