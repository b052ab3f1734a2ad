// Where on a machine the mesh may put a module's things. Every path a manifest, a `--place` or a
// node's `--root` names is checked here, where it enters, and again by the node's agent before it
// touches the disk (src/agent/path-guard.ts): a path is refused when it is absolute where it must
// be relative, is not written as the one folder it means (`..`, `.`, `//`, a trailing `/`), or
// falls in the machine's own folders. Pure: the agent adds what only the disk can say (symlinks).

/** Why a path is refused: the reason alone; the caller names the field, the path and what the field is for. */
export type PathProblem = string;

/** `folder` itself or anything under it. */
export const isWithin = (path: string, folder: string): boolean => path === folder || path.startsWith(folder === '/' ? '/' : `${folder}/`);

/** Anything strictly under `folder`. */
export const isInside = (path: string, folder: string): boolean => path !== folder && isWithin(path, folder);

// eslint-disable-next-line no-control-regex -- the point is to find them
const CONTROL = /[\u0000-\u001f\u007f]/;

/** The segments' faults, shared by relative and absolute paths: what would make the path mean another folder than it reads as. */
const segmentProblem = (segments: readonly string[]): PathProblem | undefined => {
  if (segments.includes('..')) return 'contains ".."';
  if (segments.includes('')) return 'has an empty segment ("//" or a trailing "/")';
  if (segments.includes('.')) return 'has a "." segment';
  return undefined;
};

/**
 * A path below a place (`files[].as`, `source.path`, `build.output`): relative, and each segment
 * a name, so joined to its place it names something inside it. `dotIsPlace`: `.` alone means the
 * place itself (a module at its repository's root).
 */
export const relativePathProblem = (value: string, options: { dotIsPlace?: boolean } = {}): PathProblem | undefined => {
  if (value === '') return 'is empty';
  if (CONTROL.test(value)) return 'contains a control character';
  if (value.startsWith('/')) return 'is absolute';
  if (value === '.' && options.dotIsPlace) return undefined;
  return segmentProblem(value.split('/'));
};

/** An absolute path written as the one folder it means: `/`, then names. */
export const absolutePathProblem = (value: string): PathProblem | undefined => {
  if (value === '') return 'is empty';
  if (CONTROL.test(value)) return 'contains a control character';
  if (!value.startsWith('/')) return 'is not an absolute path';
  if (value === '/') return undefined;
  return segmentProblem(value.slice(1).split('/'));
};

/** What the path is put to: a placed directory (chowned and chmodded as its module asks), a node's root, or a shared file a region is written into. */
export type HostPathUse = 'place' | 'root' | 'region';

/** The mesh's own home on a machine: the default node root, with the agent's state and the secrets it places (`.mesh`). */
export const MESH_HOME = '/var/lib/mesh';

const PROGRAMS = "the machine's programs and libraries";
const RUNNING = "the machine's running state";
const KERNEL = "the kernel's";

/** Folders that are the machine's, with all they hold: nothing of a module's goes in them. */
const SYSTEM_TREES: readonly (readonly [string, string])[] = [
  ['/etc', "the machine's configuration"],
  ['/usr', PROGRAMS],
  ['/bin', PROGRAMS],
  ['/sbin', PROGRAMS],
  ['/boot', "the machine's boot files"],
  ['/efi', "the machine's boot files"],
  ['/dev', KERNEL],
  ['/proc', KERNEL],
  ['/sys', KERNEL],
  ['/root', "root's home"],
  ['/run', RUNNING],
  ['/var/run', RUNNING],
  ['/var/lock', RUNNING],
  ['/var/lib/dpkg', "the package manager's"],
  ['/var/lib/apt', "the package manager's"],
  ['/var/cache/apt', "the package manager's"],
  ['/var/lib/systemd', "the service manager's"],
  ['/var/spool/cron', "the machine's scheduled jobs"],
  ['/snap', PROGRAMS],
  ['/lost+found', "the file system's"],
];

/** Folders the machine shares: a module's folder may be made inside one, but is never the folder itself. */
const SHARED_FOLDERS = new Set(['/', '/home', '/var', '/var/lib', '/var/log', '/var/cache', '/var/spool', '/var/mail', '/var/tmp', '/var/backups', '/var/opt', '/var/local', '/tmp', '/dev/shm', '/srv', '/opt', '/mnt', '/media', MESH_HOME]);

/**
 * In /etc, a region may go into a file the machine shares with other software (hosts, dhcpcd.conf
 * — ADR 0102), but not into one that decides who may log in, what runs as root or at boot, or what
 * every program loads: lines there are a way onto the machine, not a setting.
 */
const ETC_GUARDED = new Set([
  'passwd', 'shadow', 'group', 'gshadow', 'subuid', 'subgid', 'sudoers', 'sudoers.d', 'doas.conf', 'pam.d', 'pam.conf', 'security', 'polkit-1', 'ssh', 'login.defs', 'securetty', 'shells',
  'crontab', 'anacrontab', 'cron.d', 'cron.hourly', 'cron.daily', 'cron.weekly', 'cron.monthly', 'init.d', 'rc.local', 'systemd', 'udev', 'modprobe.d', 'modules', 'modules-load.d', 'sysctl.conf', 'sysctl.d',
  'ld.so.preload', 'ld.so.conf', 'ld.so.conf.d', 'profile', 'profile.d', 'environment', 'bash.bashrc', 'fstab', 'crypttab', 'apt', 'sudo.conf', 'nsswitch.conf', 'hosts.allow', 'hosts.deny', 'mesh',
]);

const firstSegment = (path: string): string => path.split('/')[1] ?? '';

/** The machine's folder a (lexically clean, absolute) path falls in, and why a module's thing does not go there; undefined when it may. */
export const systemFolderProblem = (path: string, use: HostPathUse): PathProblem | undefined => {
  if (path === '/') return 'is / (the root of the machine)';
  // /lib, /lib32, /lib64, /libx32, /lib.usr-is-merged: every one of them is the machine's
  const lib = firstSegment(path);
  if (/^lib(\d+|x32)?$|^lib\./.test(lib)) return `falls in /${lib} (${PROGRAMS})`;
  for (const [tree, whose] of SYSTEM_TREES) {
    if (!isWithin(path, tree)) continue;
    // /dev/shm is the machine's shared memory folder, open to everyone as /tmp is: shared, not the kernel's
    if (tree === '/dev' && isWithin(path, '/dev/shm')) break;
    if (use === 'region' && tree === '/etc') {
      const name = path.split('/')[2] ?? '';
      if (path !== '/etc' && !ETC_GUARDED.has(name) && !/^rc[0-6S]\.d$/.test(name)) continue;
      return `falls in /etc/${name} (it decides who may log in, what runs as root or at boot, or what every program loads)`;
    }
    return `falls in ${tree} (${whose})`;
  }
  // A user's own settings (~/.ssh, ~/.bashrc, ~/.config…) are theirs, and a home itself is its user's.
  const home = /^\/home\/[^/]+/.exec(path)?.[0];
  if (home !== undefined && path === home) return `is ${home} (a user's home)`;
  if (home !== undefined && path.slice(home.length + 1).startsWith('.')) return `falls in ${path.split('/').slice(0, 4).join('/')} (a user's own settings)`;
  if (use !== 'place' && use !== 'root' && isWithin(path, MESH_HOME)) return `falls in ${MESH_HOME} (the mesh's own: the agent's state and the secrets it places)`;
  // A root is not made anything's: the mesh makes folders inside it, so a shared folder may be one.
  if (SHARED_FOLDERS.has(path) && use !== 'root') return `is ${path} itself (a folder the machine shares: a module's folder goes inside it)`;
  return undefined;
};

/** Why an absolute host path may not be put to `use`, or undefined: written as the folder it means, and none of the machine's own. */
export const hostPathProblem = (value: string, use: HostPathUse): PathProblem | undefined => absolutePathProblem(value) ?? systemFolderProblem(value, use);

/**
 * A directory placed on a node (`--place`): a host path, and, under the node's root (or the
 * mesh's default home), only inside the module's own folder there — what else is there is another
 * module's, or the mesh's own (`.mesh`: the secrets and identities its agent places).
 */
export const placementProblem = (value: string, where: { root: string; module: string }): PathProblem | undefined => {
  const problem = hostPathProblem(value, 'place');
  if (problem) return problem;
  const own = `${where.root}/${where.module}`;
  for (const [home, what] of [[where.root, "the node's root"], [MESH_HOME, "the mesh's home"]] as const) {
    if (!isWithin(value, home) || isInside(value, own)) continue;
    const at = value === home ? `is ${what} ${home}` : `is inside ${what} ${home} but outside ${where.module}'s own folder there (${own})`;
    return `${at}, where the other modules' folders and the mesh's own (its agent's state, the secrets under .mesh) are`;
  }
  return undefined;
};
