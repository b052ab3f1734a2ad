// `npm start`: the main job. Installs what is missing, then raises a whole local mesh: nats-server,
// PostgreSQL, the controller, two node agents enrolled with tokens, the fixture catalogue, and
// modules that really run.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ensureNpmPackages, root } from './ensure-deps.js';

ensureNpmPackages();
const mesh = (...args) => spawnSync(process.execPath, [join(root, 'bin', 'mesh.js'), ...args], { cwd: root, stdio: 'inherit' }).status ?? 1;
process.exit(mesh('dev', 'up', '--demo'));
