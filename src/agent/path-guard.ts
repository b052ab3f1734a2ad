import { lstatSync, readlinkSync } from 'node:fs';
import { posix } from 'node:path';
import { hostPathProblem, isWithin, systemFolderProblem, type HostPathUse } from '../domain/host-paths.js';

// The agent's own look at a path before it writes, chowns or chmods anything there: the control
// plane checked the path where it entered (src/domain/host-paths.ts), and this checks it again on
// the machine, where only the disk can say what a path leads to. Each symbolic link on the way is
// followed as the kernel would, and the path is refused when where it lands is one of the
// machine's own folders, the agent's state folder, or outside the place it was declared in (the
// module's directory a file is written into). A link made by a user other than root or the
// agent's own — a module's process, in a folder that is its — is not followed at all.

export type Guarded = { ok: true; resolved: string } | { ok: false; why: string };

/** Linux follows at most 40 links in one lookup (ELOOP). */
const MAX_LINKS = 40;

const agentUid = (): number => process.getuid?.() ?? 0;

/**
 * Where `path` lands on this disk now: each part that exists is followed (a symbolic link to what
 * it names, a relative one from its folder), and what does not exist yet is kept as written.
 */
export const landing = (path: string): Guarded => {
  const pending = path.split('/').filter((part) => part !== '');
  let at = '/';
  let links = 0;
  while (pending.length > 0) {
    const part = pending.shift() as string;
    if (part === '.') continue;
    if (part === '..') {
      at = posix.dirname(at);
      continue;
    }
    const next = posix.join(at, part);
    let stat;
    try {
      stat = lstatSync(next);
    } catch {
      return { ok: true, resolved: posix.join(next, ...pending) };
    }
    if (!stat.isSymbolicLink()) {
      at = next;
      continue;
    }
    if (stat.uid !== 0 && stat.uid !== agentUid()) return { ok: false, why: `${next} is a symbolic link made by user ${stat.uid}, and the agent follows only root's or its own` };
    if (++links > MAX_LINKS) return { ok: false, why: `${path} goes through more than ${MAX_LINKS} symbolic links` };
    const target = readlinkSync(next);
    if (target.startsWith('/')) at = '/';
    pending.unshift(...target.split('/').filter((p) => p !== ''));
  }
  return { ok: true, resolved: at };
};

export interface PathGuard {
  /**
   * Refuses `path` unless it, and where it lands on the disk, is a place a module's things may be:
   * `use` says what it is put to (a module's directory or file, or a region of a shared file);
   * `place`, the folder it must stay inside (a file's directory).
   */
  check(path: string, use: Extract<HostPathUse, 'place' | 'region'>, place?: string): Guarded;
}

export const pathGuard = (stateDir: string): PathGuard => {
  const ownState = (path: string, state: string): boolean => isWithin(path, state) || isWithin(state, path);
  return {
    check(path, use, place) {
      const written = hostPathProblem(path, use);
      if (written) return { ok: false, why: `${path} ${written}` };
      if (ownState(path, stateDir)) return { ok: false, why: `${path} is ${path === stateDir ? '' : isWithin(path, stateDir) ? 'inside ' : 'a folder holding '}the agent's state folder ${stateDir}` };
      if (place !== undefined && !isWithin(path, place)) return { ok: false, why: `${path} is outside its place ${place}` };
      const landed = landing(path);
      if (!landed.ok) return landed;
      const resolved = landed.resolved;
      const lands = resolved === path ? path : `${path} resolves to ${resolved}, which`;
      const system = systemFolderProblem(resolved, use);
      if (system) return { ok: false, why: `${lands} ${system}` };
      const state = landing(stateDir);
      if (state.ok && ownState(resolved, state.resolved)) return { ok: false, why: `${lands} is the agent's state folder ${stateDir}, or in or around it` };
      if (place !== undefined) {
        const realPlace = landing(place);
        if (!realPlace.ok) return realPlace;
        if (!isWithin(resolved, realPlace.resolved)) return { ok: false, why: `${lands} is outside its place ${place}${realPlace.resolved === place ? '' : ` (${realPlace.resolved})`}` };
      }
      return { ok: true, resolved };
    },
  };
};
