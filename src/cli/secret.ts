import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { readSecrets } from '../projections/mesh/secrets.js';
import { output, table } from './output.js';
import { atLeastFlag, withReads } from './reads.js';
import { group, run, verb, WIDE_OPTION } from './verbs.js';

// mesh secret status: the secrets the log names — never a value — each with its version and the
// nodes the vault hands it to. Rotation is not built yet: every secret is at rest.

export const defineSecret = (mesh: CommandUnknownOpts): void => {
  const secret = group(mesh, 'secret', 'the secrets the mesh names (their values stay in the vault)');
  verb(secret, 'status', { summary: 'every secret the log names: its version, the nodes it goes to, what it is for', example: 'mesh secret status', exits: [6, 7] })
    .option('--at-least <seq>', 'wait until the projections have reached this log sequence')
    .option(...WIDE_OPTION)
    .action(run(secretStatus));
};

const secretStatus = (values: { json?: true; atLeast?: string; output?: string }): Promise<number> => {
  const out = output(values.json ?? false, values.output);
  return withReads(['secrets'], { atLeast: atLeastFlag(values.atLeast) }, async (session) => {
    const secrets = await readSecrets(session);
    if (out.json) out.data(secrets.map((s) => ({ ...s, rotation: null })));
    else table(out, ['SECRET', 'VERSION', 'ROTATION', 'RECIPIENTS', 'PURPOSE'], secrets.map((s) => [s.secret, String(s.version), 'none', s.recipients.join(', ') || 'none', s.purpose]));
    return 0;
  });
};
