// Installs the npm packages when node_modules is missing or older than package-lock.json, so the
// README's two commands work on a fresh clone. Plain JavaScript: it runs before anything is installed.
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../', import.meta.url));

export const ensureNpmPackages = () => {
  const lock = join(root, 'package-lock.json');
  const installed = join(root, 'node_modules', '.package-lock.json');
  if (existsSync(installed) && statSync(installed).mtimeMs >= statSync(lock).mtimeMs) return;
  process.stderr.write('installing npm packages (npm ci)…\n');
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
};

if (import.meta.url === `file://${process.argv[1]}`) ensureNpmPackages();
