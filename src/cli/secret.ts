import { loadOperatorKey } from '../adapters/operator-keys.js';
import { loadConfig } from '../config.js';
import { openGenesisSecret, operatorRecipient } from '../controller/genesis-secrets.js';
import { readSecrets, type SecretRead, type SecretRotationRead } from '../projections/mesh/secrets.js';
import { runCommand } from './mesh-session.js';
import { output, table } from './output.js';
import { atLeastFlag, withReads } from './reads.js';

// mesh secret status: the secrets the log names — never a value — each with its version, the
// nodes the vault hands it to, and its rotation: the step it is at and whom it waits on; the mesh's
// own (made at genesis) with the keys they are sealed to and whether the vault holds them yet.
// mesh secret rotate NAME [--abandon]: an operator's signed command that starts a rotation (or
// gives one up before its old value is retired); the steps after it are the controller's.
// mesh secret unseal NAME: one of the mesh's own, opened from the genesis file with the operator's
// own key — the way back to the PostgreSQL roles' passwords when the controller's key is lost.


export const unseal = (name: string, values: { json?: true; file?: string }): Promise<number> => {
  const out = output(values.json ?? false);
  const config = loadConfig();
  const key = loadOperatorKey(config.operatorKeyFile);
  const opened = openGenesisSecret(values.file ?? config.genesisSecretsFile, name, operatorRecipient(key.operator), key);
  if (out.json) out.data({ secret: name, version: opened.version, value: opened.value });
  else out.line(opened.value);
  return Promise.resolve(0);
};

export const secretStatus = (values: { json?: true; atLeast?: string; output?: string }): Promise<number> => {
  const out = output(values.json ?? false, values.output);
  return withReads(['secrets'], { atLeast: atLeastFlag(values.atLeast) }, async (session) => {
    const secrets = await readSecrets(session);
    if (out.json) out.data(secrets);
    else {
      // What the vault has of each, in a column of its own once the mesh has secrets of its own
      // (the vault made every other one): kept or not yet.
      const vault = out.wide || secrets.some((s) => s.origin === 'genesis');
      table(
        out,
        ['SECRET', 'VERSION', 'ROTATION', 'RECIPIENTS', ...(vault ? ['VAULT'] : []), 'PURPOSE'],
        secrets.map((s) => [s.secret, String(s.version), rotationText(s.rotation), s.recipients.join(', ') || 'none', ...(vault ? [vaultText(s)] : []), s.purpose]),
      );
    }
    return 0;
  });
};

/** What the vault has of it: `made` what it made; the mesh's own `kept` once handed over, else `not yet` (sealed in the genesis file alone). */
const vaultText = (s: SecretRead): string => (s.origin === 'vault' ? 'made' : s.handedOver ? 'kept' : 'not yet');

/** `applying v2, waits on alpha/logins` — the step and exactly whom it waits on. */
const rotationText = (rotation: SecretRotationRead | null): string => {
  if (!rotation) return 'none';
  const who = rotation.waitsOn === 'vault' ? 'the vault' : rotation.waitsOn.map((p) => `${p.node}/${p.module}`).join(', ');
  return `${rotation.step} v${rotation.version}, waits on ${who}`;
};

export const secretRotate = (name: string, values: { json?: true; commandId?: string; plan?: true; abandon?: true; reason?: string }): Promise<number> =>
  runCommand(
    output(values.json ?? false),
    values.abandon ? { type: 'abandon-secret-rotation', secret: name, reason: values.reason ?? 'abandoned by an operator' } : { type: 'rotate-secret', secret: name },
    values.commandId,
    { plan: values.plan },
  );
