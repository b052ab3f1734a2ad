import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { RefusedError } from '../errors.js';

// The local stack runs Debian's own servers. When one is missing we install it with apt-get if we
// may (root, apt-get present); otherwise we refuse with the exact command an operator should run.

export interface DebianPackage {
  package: string;
  /** Candidate paths of the binary the package provides, first match wins. */
  binaries: readonly string[];
  what: string;
}

export const NATS_SERVER: DebianPackage = {
  package: 'nats-server',
  binaries: ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'],
  what: 'nats-server (JetStream)',
};

export const POSTGRESQL_15: DebianPackage = {
  package: 'postgresql',
  binaries: ['/usr/lib/postgresql/15/bin/postgres'],
  what: 'PostgreSQL 15',
};

const findOnPath = (name: string): string | undefined => {
  const result = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  const found = result.stdout.trim();
  return result.status === 0 && found ? found : undefined;
};

export const locate = (pkg: DebianPackage): string | undefined =>
  pkg.binaries.find((candidate) => existsSync(candidate)) ??
  (pkg.package === 'nats-server' ? findOnPath('nats-server') : undefined);

let aptUpdated = false;

export const ensureInstalled = (pkg: DebianPackage, say: (line: string) => void): string => {
  const found = locate(pkg);
  if (found) return found;
  const installCommand = `apt-get update && apt-get install -y ${pkg.package}`;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || !findOnPath('apt-get')) {
    throw new RefusedError(
      `${pkg.what} is not installed and this process cannot install it; run: sudo sh -c '${installCommand}'`,
      { package: pkg.package },
    );
  }
  say(`installing ${pkg.what} with apt-get (Debian package ${pkg.package})…`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    if (!aptUpdated) {
      execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
      aptUpdated = true;
    }
    execFileSync('apt-get', ['install', '-y', '-qq', pkg.package], { stdio: ['ignore', 'ignore', 'inherit'], env });
  } catch (cause) {
    throw new RefusedError(`installing ${pkg.what} failed; run: ${installCommand}`, { package: pkg.package }, { cause });
  }
  const installed = locate(pkg);
  if (!installed) {
    throw new RefusedError(`apt-get installed ${pkg.package} but ${pkg.what} was not found at ${pkg.binaries.join(' or ')}`, {
      package: pkg.package,
    });
  }
  return installed;
};
