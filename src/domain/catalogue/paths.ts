import { absolutePathProblem, hostPathProblem, relativePathProblem } from '../host-paths.js';
import type { Problem } from '../refusal.js';

// Every path a manifest names, checked where it enters: a file stays inside the directory it is
// written into, a build inside its checkout, a container's mount at the folder it reads as, and a
// region in a file the machine shares — never one of the machine's own (src/domain/host-paths.ts).
// Read from the raw manifest, so a manifest with a schema error still hears of these at once.

type Raw = Record<string, unknown>;
const record = (value: unknown): Raw => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Raw) : {});
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** A path as it goes into a refusal: quoted, and cut short enough to read. */
export const quotedPath = (path: string): string => JSON.stringify(path.length > 120 ? `${path.slice(0, 120)}…` : path);

export const pathProblems = (manifest: unknown): Problem[] => {
  const raw = record(manifest);
  const resources = record(raw.resources);
  const problems: Problem[] = [];
  const check = (what: string, value: unknown, problem: (path: string) => string | undefined, why: string, remedy: string): void => {
    const path = text(value);
    const found = path === undefined ? undefined : problem(path);
    if (path !== undefined && found) problems.push({ what, why: `${quotedPath(path)} ${found}: ${why}`, remedy });
  };

  list(resources.files).forEach((file, i) =>
    check(`resources.files.${i}.as`, record(file).as, (p) => relativePathProblem(p), "a file stays inside its module's place", 'name the file inside its directory, e.g. "app.ini" or "conf.d/app.ini"'),
  );
  // One that is not absolute at all is the schema's to name (the region's and the mount's own patterns).
  const absolute = (problem: (path: string) => string | undefined) => (path: string) => (path.startsWith('/') ? problem(path) : undefined);
  list(resources.regions).forEach((region, i) =>
    check(`resources.regions.${i}.file`, record(region).file, absolute((p) => hostPathProblem(p, 'region')), 'a region is written into a file the machine shares with other software (ADR 0102), never into one of its own', 'name the shared file by its absolute path, e.g. /etc/hosts'),
  );
  list(resources.containers).forEach((container, i) =>
    list(record(container).mounts).forEach((mount, j) =>
      check(`resources.containers.${i}.mounts.${j}.to`, record(mount).to, absolute(absolutePathProblem), 'a mount target is the one folder inside the container it reads as', 'write it as an absolute path of names, e.g. /data'),
    ),
  );
  check('source.path', record(raw.source).path, (p) => relativePathProblem(p, { dotIsPlace: true }), 'a build runs inside its checkout', 'name the folder inside the repository, e.g. "services/my-module", or "." for its root');
  check('build.output', record(raw.build).output, (p) => relativePathProblem(p, { dotIsPlace: true }), 'the artifact is taken from inside the build folder', 'name the folder the recipe leaves, e.g. "out"');
  return problems;
};
