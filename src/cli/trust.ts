import { readFileSync } from 'node:fs';
import { ValidationError } from '../errors.js';
import { printResult, withMesh } from './mesh-session.js';
import { output } from './output.js';

// mesh trust root CERTIFICATE.pem
//
// The mesh's trust root (issue 129 of the seeds): the root certificate of the authority that issues
// the mesh's certificates, recorded in the log; every machine whose modules declare a trust anchor
// (the private network's) is sent it, and setting another rotates it on each of them.


export const trustRoot = (file: string, values: { json?: true; commandId?: string; plan?: true }): Promise<number> => {
  let certificate: string;
  try {
    certificate = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ValidationError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, { field: 'certificate' });
  }
  return withMesh(async ({ mesh, metadata }) => printResult(output(values.json ?? false), await mesh.execute({ type: 'set-trust-root', certificate }, metadata(values.commandId))), { plan: values.plan });
};
