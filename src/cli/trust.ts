import { readFileSync } from 'node:fs';
import type { CommandUnknownOpts } from '@commander-js/extra-typings';
import { ValidationError } from '../errors.js';
import { PLAN_OPTION, printResult, withMesh } from './mesh-session.js';
import { output } from './output.js';
import { group, run, verb } from './verbs.js';

// mesh trust root CERTIFICATE.pem
//
// The mesh's trust root (issue 129 of the seeds): the root certificate of the authority that issues
// the mesh's certificates, recorded in the log; every machine whose modules declare a trust anchor
// (the private network's) is sent it, and setting another rotates it on each of them.

export const defineTrust = (mesh: CommandUnknownOpts): void => {
  const trust = group(mesh, 'trust', 'the root certificate the mesh\'s machines trust');
  verb(trust, 'root', { summary: 'set (or rotate) the mesh\'s root certificate, which every machine with a trust anchor is sent', example: 'mesh trust root ca/root.crt', exits: [2, 3, 4, 6] })
    .argument('<certificate>', 'a PEM file holding one CA certificate')
    .option('--command-id <id>', 'a retry with the same id acts once')
    .option(...PLAN_OPTION)
    .action(run(trustRoot));
};

const trustRoot = (file: string, values: { json?: true; commandId?: string; plan?: true }): Promise<number> => {
  let certificate: string;
  try {
    certificate = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ValidationError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, { field: 'certificate' });
  }
  return withMesh(async ({ mesh, metadata }) => printResult(output(values.json ?? false), await mesh.execute({ type: 'set-trust-root', certificate }, metadata(values.commandId))), { plan: values.plan });
};
