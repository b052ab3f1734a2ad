import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// Certificates made with openssl for a test: a root of an authority (CA:TRUE), and a leaf signed
// by nothing that is no authority (CA:FALSE). Public material only; the keys stay in the folder.

const openssl = (args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });

export const makeCertificate = (dir: string, name: string, options: { ca: boolean }): string => {
  mkdirSync(dir, { recursive: true });
  const cert = join(dir, `${name}.crt`);
  openssl([
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '30',
    '-keyout', join(dir, `${name}.key`), '-out', cert, '-subj', `/CN=${name}`,
    '-addext', options.ca ? 'basicConstraints=critical,CA:TRUE' : 'basicConstraints=critical,CA:FALSE',
  ]);
  return readFileSync(cert, 'utf8');
};
