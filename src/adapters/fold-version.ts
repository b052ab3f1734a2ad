import { projectRoot } from '../config.js';
import { foldCodeVersionOf } from '../../bin/fold-version.js';

// Which code folds the log in this process (bin/fold-version.js says what it covers and why).

/** Written into the bundle by scripts/build-cli.js (esbuild `define`); not defined when running from source. */
declare const MESH_FOLD_VERSION: string | undefined;

let computed: string | undefined;

/** The digest of the fold's code this process runs: from the bundle when it carries one, else from the source files, once. */
export const foldCodeVersion = (): string => {
  if (typeof MESH_FOLD_VERSION === 'string') return MESH_FOLD_VERSION;
  computed ??= foldCodeVersionOf(projectRoot);
  return computed;
};
