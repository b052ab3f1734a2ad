import { DURATION_PATTERN, LOCAL_NAME_MAX, LOCAL_NAME_MAX_REASON, NAME_MAX, NAME_MAX_REASON, isPort, parseDuration } from '../limits.js';
import type { Problem } from '../refusal.js';

// The range of every value a manifest carries, beside the shapes the schema checks: names short
// enough for every place they are used, operator defaults of their declared type (a port a port),
// durations positive and bounded. Read from the raw manifest, so a manifest with a schema error
// still hears of these in the same refusal. Checked at registration only: a manifest already in
// the log is read as it was written.

type Raw = Record<string, unknown>;
const record = (value: unknown): Raw => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Raw) : {});
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** A seat's `accepts[].retain` is its work queue's max age: positive, and not beyond ten years. */
export const RETAIN_MAX = { ms: 3650 * 86_400_000, written: '3650d', why: 'it becomes the max age of the seat\'s work-queue stream, and work is not kept for longer than ten years' };

const longName = (what: string, value: unknown, max: number, reason: string, kind: string): Problem[] =>
  typeof value === 'string' && value.length > max
    ? [{ what, why: `a ${kind} is at most ${max} characters, and "${value.slice(0, 40)}…" has ${value.length}: ${reason}`, remedy: `shorten it to ${max} characters or fewer` }]
    : [];

const nameProblems = (raw: Raw): Problem[] => {
  const problems: Problem[] = [...longName('name', raw.name, NAME_MAX, NAME_MAX_REASON, 'module name')];
  list(raw.seats).forEach((seat, i) => problems.push(...longName(`seats.${i}.name`, record(seat).name, NAME_MAX, NAME_MAX_REASON, 'seat name')));
  list(raw.requires).forEach((r, i) => problems.push(...longName(`requires.${i}.name`, record(r).name, LOCAL_NAME_MAX, LOCAL_NAME_MAX_REASON, 'requirement name')));
  list(raw.provides).forEach((p, i) => problems.push(...longName(`provides.${i}.provision`, record(p).provision, LOCAL_NAME_MAX, LOCAL_NAME_MAX_REASON, 'provision name')));
  const resources = record(raw.resources);
  for (const kind of ['containers', 'processes', 'files', 'runOnce'] as const) {
    list(resources[kind]).forEach((resource, i) => problems.push(...longName(`resources.${kind}.${i}.name`, record(resource).name, LOCAL_NAME_MAX, LOCAL_NAME_MAX_REASON, 'resource name')));
  }
  return problems;
};

const TYPE_CHECKS: Record<string, { fits: (value: unknown) => boolean; is: string }> = {
  port: { fits: isPort, is: 'a port: a whole number from 1 to 65535' },
  number: { fits: (value) => typeof value === 'number' && Number.isFinite(value), is: 'a number' },
  boolean: { fits: (value) => typeof value === 'boolean', is: 'true or false' },
  string: { fits: (value) => typeof value === 'string', is: 'a string' },
};

/** An operator value's default is of the type the requirement declares: a port default of -1, 0, 1.5 or 70000 is no port. */
const defaultProblems = (raw: Raw): Problem[] =>
  list(raw.requires).flatMap((r, i): Problem[] => {
    const requirement = record(r);
    if (requirement.default === undefined || typeof requirement.type !== 'string') return [];
    const check = TYPE_CHECKS[requirement.type];
    if (!check || check.fits(requirement.default)) return [];
    const name = typeof requirement.name === 'string' ? requirement.name : 'NAME';
    return [
      {
        what: `requires.${i}.default`,
        why: `${JSON.stringify(requirement.default)} is not ${check.is}, and requirement ${name} is of type ${requirement.type}`,
        remedy: `write ${check.is}, or leave the default out so each assignment sets it: mesh assign … --set ${name}=VALUE`,
      },
    ];
  });

const retainProblems = (raw: Raw): Problem[] =>
  list(raw.seats).flatMap((seat, i) =>
    list(record(seat).accepts).flatMap((accept, j): Problem[] => {
      const retain = record(accept).retain;
      // one that is no duration at all is the schema's to name
      if (typeof retain !== 'string' || !DURATION_PATTERN.test(retain)) return [];
      const parsed = parseDuration(retain, RETAIN_MAX);
      return 'why' in parsed ? [{ what: `seats.${i}.accepts.${j}.retain`, why: parsed.why, remedy: `write a duration from 1s to ${RETAIN_MAX.written}, e.g. 7d` }] : [];
    }),
  );

/** Every value of a manifest outside its range, all at once. */
export const valueProblems = (manifest: unknown): Problem[] => {
  const raw = record(manifest);
  const recipe = record(raw.build).recipe;
  const blankRecipe: Problem[] =
    typeof recipe === 'string' && recipe.length > 0 && recipe.trim() === '' ? [{ what: 'build.recipe', why: 'the recipe is blank: a build would run nothing', remedy: 'write the command that builds the module, or leave the build section out' }] : [];
  return [...nameProblems(raw), ...defaultProblems(raw), ...retainProblems(raw), ...blankRecipe];
};
