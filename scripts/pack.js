// npm's prepack and postpack: what `npm pack` (and publish) wraps around the tarball.
//   prepack:  dist/ built if a source is newer, pruned to that one build, and the lockfile copied
//             to npm-shrinkwrap.json, so an install of the package gets the very versions the
//             checkout was tested with, and can be made from npm's cache alone (--offline).
//   postpack: npm-shrinkwrap.json removed again; the checkout keeps package-lock.json.
import { copyFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ensureCliBuilt, pruneCli, root } from './build-cli.js';

const shrinkwrap = join(root, 'npm-shrinkwrap.json');
const step = process.argv[2];
if (step === 'prepack') {
  await ensureCliBuilt({ say: (line) => process.stderr.write(`${line}\n`) });
  pruneCli();
  copyFileSync(join(root, 'package-lock.json'), shrinkwrap);
} else if (step === 'postpack') {
  rmSync(shrinkwrap, { force: true });
} else {
  process.stderr.write(`scripts/pack.js prepack|postpack, not "${step ?? ''}"\n`);
  process.exit(2);
}
