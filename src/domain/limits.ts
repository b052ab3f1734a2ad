import type { Problem } from './refusal.js';

// The ranges a value must be in where it enters the mesh (a manifest, a command, a CLI flag), each
// with the reason an operator is told. Checked at entry only: events already in the log are read
// as they were written, so a limit added later never holds a reader.

/** What a module, node or seat name is made of. */
export const NAME_PATTERN = /^[a-z][a-z0-9-]*$/;

/**
 * A module, node or seat name: 31 characters at most. The mesh joins a node's and a module's name
 * into one — `<node>-<module>`, a module's identity on its node and the name of the database role
 * and secret a per-consumer provision makes for it — and that must fit a PostgreSQL identifier
 * (63 bytes; a longer one is cut short, so two consumers could share a role) and a DNS label (63):
 * 31 + 1 + 31. Every other place a name goes (a path component, 255 bytes; a subject token; a
 * stream name `SEAT_<seat>`) takes that and more.
 */
export const NAME_MAX = 31;
export const NAME_MAX_REASON =
  `the mesh joins a node's and a module's name as <node>-<module> (a module's identity on its node, the database role a per-consumer provision makes), which must fit a PostgreSQL identifier and a DNS label (63 bytes): ${NAME_MAX} + 1 + ${NAME_MAX}`;

/** The names inside a manifest (requirements, resources, provisions, events): a path component and a DNS label each. */
export const LOCAL_NAME_MAX = 63;
export const LOCAL_NAME_MAX_REASON = 'it becomes a path component on the node, a container name and a subject token; 63 fits a DNS label and a PostgreSQL identifier';

export type NameKind = 'module' | 'node' | 'seat';

/** Why `value` is not a module, node or seat name, or undefined when it is one. */
export const nameProblem = (kind: NameKind, value: string, what: string): Problem | undefined => {
  if (value.length > NAME_MAX) {
    return { what, why: `a ${kind} name is at most ${NAME_MAX} characters, and "${value.slice(0, 40)}…" has ${value.length}: ${NAME_MAX_REASON}`, remedy: `choose a ${kind} name of ${NAME_MAX} characters or fewer` };
  }
  if (!NAME_PATTERN.test(value)) return { what, why: `"${value}" is not a ${kind} name: lower-case letters, digits and -, starting with a letter`, remedy: `choose another ${kind} name` };
  return undefined;
};

/** The largest log sequence a process can name exactly: JavaScript's integers are exact to 2^53 − 1. */
export const SEQ_MAX = Number.MAX_SAFE_INTEGER;

/** A log sequence as written (a flag, an argument), or why it is not one. */
export const parseSequence = (raw: string): { seq: number } | { why: string } => {
  if (!/^\d+$/.test(raw)) return { why: `"${raw}" is not a log sequence (a whole number)` };
  const seq = Number(raw);
  if (seq < 1) return { why: 'log sequences begin at 1' };
  if (!Number.isSafeInteger(seq)) return { why: `"${raw}" is beyond any log sequence (at most ${SEQ_MAX}, the largest whole number this process holds exactly)` };
  return { seq };
};

const UNITS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
export const DURATION_PATTERN = /^(\d+)([smhd])$/;

/** A duration as written (`30s`, `15m`, `12h`, `7d`) in milliseconds, or why it is not one in (0, max]. */
export const parseDuration = (raw: string, max: { ms: number; written: string; why: string }): { ms: number } | { why: string } => {
  const match = DURATION_PATTERN.exec(raw);
  if (!match) return { why: `"${raw}" is not a duration like 30m, 12h or 7d (a whole number and one of s, m, h, d)` };
  const ms = Number(match[1]) * UNITS[match[2] as keyof typeof UNITS];
  if (ms <= 0) return { why: `"${raw}" is no time at all: a duration is positive` };
  if (!(ms <= max.ms)) return { why: `"${raw}" is longer than ${max.written}, the most it may be: ${max.why}` };
  return { ms };
};

/** A TCP or UDP port: a whole number from 1 to 65535. */
export const isPort = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 65_535;
