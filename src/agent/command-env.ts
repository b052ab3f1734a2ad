import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../config.js';
import type { SystemUser } from './system-users.js';

// The environment a declared command runs in: not the agent's own (a service must not depend on
// how its agent happened to be started), only PATH, HOME, what the declaration sets, and the
// environment files it names, which hold what the declaration may not carry. The mesh's own
// program is first on the PATH: a module of the mesh's (the vault, the PostgreSQL provider) runs
// `mesh …` of the same installation as the agent that starts it.

/** Where `mesh` is, for the commands the agent runs. */
export const MESH_PROGRAM_DIR = join(projectRoot, 'bin');

export type CommandEnv = { ok: true; env: Record<string, string> } | { ok: false; reason: string };

const parseEnvFile = (text: string): Record<string, string> => {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (!trimmed || trimmed.startsWith('#')) continue;
    const at = trimmed.indexOf('=');
    if (at <= 0) continue;
    const value = trimmed.slice(at + 1);
    env[trimmed.slice(0, at).replace(/^export\s+/, '')] = /^(["']).*\1$/.test(value) ? value.slice(1, -1) : value;
  }
  return env;
};

export const commandEnv = (
  declared: { env: Record<string, string>; envFiles: { path: string; reason: string }[] },
  user: SystemUser | null,
): CommandEnv => {
  const env: Record<string, string> = {
    PATH: `${MESH_PROGRAM_DIR}:${process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'}`,
    HOME: user?.home ?? process.env.HOME ?? '/',
  };
  for (const file of declared.envFiles) {
    if (!existsSync(file.path)) return { ok: false, reason: `waiting for ${file.path} (${file.reason})` };
    Object.assign(env, parseEnvFile(readFileSync(file.path, 'utf8')));
  }
  return { ok: true, env: { ...env, ...declared.env } };
};
