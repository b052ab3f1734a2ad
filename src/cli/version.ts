import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { foldCodeVersion } from '../adapters/fold-version.js';
import { projectRoot } from '../config.js';
import { ValidationError } from '../errors.js';
import { output } from './output.js';

// `mesh --version` (or -V): the package's version and the digest of the code that folds the log
// (bin/fold-version.js), the two things that say which mesh code a machine runs — a controller
// whose fold digest differs from its peers' reads none of their snapshots.

/** Written into the bundle by scripts/build-cli.js (esbuild `define`); not defined when running from source. */
declare const MESH_VERSION: string | undefined;

export const VERSION_FLAGS: readonly string[] = ['--version', '-V'];

/** The package's version: the bundle's, else package.json's. */
export const meshVersion = (): string => {
  if (typeof MESH_VERSION === 'string') return MESH_VERSION;
  const read: unknown = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8'));
  const version = typeof read === 'object' && read !== null && 'version' in read ? read.version : undefined;
  return typeof version === 'string' ? version : 'unknown';
};

/** The flag, when the first word but --json is --version or -V. */
const versionFlagIn = (argv: readonly string[]): string | undefined => {
  const first = argv.find((word) => word !== '--json');
  return first !== undefined && VERSION_FLAGS.includes(first) ? first : undefined;
};

/** `mesh --version [--json]`, `mesh --json -V`: the version is asked for, before any verb. */
export const asksVersion = (argv: readonly string[]): boolean => versionFlagIn(argv) !== undefined;

/** Prints the version; it takes nothing but --json beside its flag. */
export const printVersion = (argv: readonly string[]): number => {
  const flag = versionFlagIn(argv) ?? '--version';
  const extra = argv.filter((word) => word !== '--json' && word !== flag);
  if (extra.length > 0) throw new ValidationError(`${flag} takes nothing but --json; "${extra.join(' ')}" is not for it`, { field: flag });
  const out = output(argv.includes('--json'));
  const answer = { version: meshVersion(), foldVersion: foldCodeVersion() };
  if (out.json) out.data(answer);
  else out.line(`mesh ${answer.version} (fold ${answer.foldVersion})`);
  return 0;
};
