import { readFileSync } from 'node:fs';

// Users and groups by name, from the machine's own databases. A name the machine does not know
// is a refusal the report carries, never a guess.

export interface SystemUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

const entries = (file: string): string[][] => {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line && !line.startsWith('#'))
      .map((line) => line.split(':'));
  } catch {
    return [];
  }
};

export const findUser = (name: string): SystemUser | undefined => {
  const row = entries('/etc/passwd').find(([n, , uid]) => n === name || uid === name);
  if (!row) return undefined;
  return { name: row[0] ?? name, uid: Number(row[2]), gid: Number(row[3]), home: row[5] || '/' };
};

export const findGroup = (name: string): number | undefined => {
  const row = entries('/etc/group').find(([n, , gid]) => n === name || gid === name);
  return row ? Number(row[2]) : undefined;
};

export type Resolved<T> = { ok: true; value: T } | { ok: false; reason: string };

const runningUid = (): number => process.getuid?.() ?? 0;

/** The user a command runs as; null means the agent's own. */
export const resolveRunAs = (user: string | null): Resolved<SystemUser | null> => {
  if (user === null) return { ok: true, value: null };
  const found = findUser(user);
  if (!found) return { ok: false, reason: `no user ${user} on this machine` };
  if (runningUid() !== 0 && found.uid !== runningUid()) {
    return { ok: false, reason: `the agent runs as uid ${runningUid()} and can start nothing as ${user} (uid ${found.uid})` };
  }
  return { ok: true, value: found };
};

/** `user` or `user:group` (the user's own group when none is named). */
export const resolveOwner = (owner: string): Resolved<{ uid: number; gid: number }> => {
  const [userName = '', groupName] = owner.split(':');
  const user = findUser(userName);
  if (!user) return { ok: false, reason: `no user ${userName} on this machine` };
  const gid = groupName === undefined ? user.gid : findGroup(groupName);
  if (gid === undefined) return { ok: false, reason: `no group ${groupName} on this machine` };
  if (runningUid() !== 0 && user.uid !== runningUid()) {
    return { ok: false, reason: `the agent runs as uid ${runningUid()} and cannot give ${owner} a directory` };
  }
  return { ok: true, value: { uid: user.uid, gid } };
};
