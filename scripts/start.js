// `npm start`: the main job. Installs what is missing, raises the local stack (nats-server,
// PostgreSQL, the log) and prints the log so far.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ensureNpmPackages, root } from './ensure-deps.js';

ensureNpmPackages();
const mesh = (...args) => spawnSync(process.execPath, [join(root, 'bin', 'mesh.js'), ...args], { cwd: root, stdio: 'inherit' }).status ?? 1;
const up = mesh('dev', 'up');
if (up !== 0) process.exit(up);
process.stdout.write('\nthe log so far:\n');
process.exit(mesh('log'));
