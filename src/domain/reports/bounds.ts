import { z } from 'zod';

// How much a node may say in one message. Whatever a node sends may become a commit of the log,
// and the log is never purged: every field is bounded where it enters (the report ingester parses
// with these before anything else), and the agent shortens what it says to fit (report-of.ts).
// docs/decisions.md, "What a node says is bounded, and a node changing its mind is stated once per interval".

/** The largest report read, serialised: a node of a thousand resources each with a long reason fits. */
export const REPORT_MAX_BYTES = 256 * 1024;
/** The largest heartbeat read: a node, a time, a declaration's sequence and digest, and its capabilities. */
export const HEARTBEAT_MAX_BYTES = 4 * 1024;
/** Resources one report answers for: more than any declaration the mesh composes for one machine. */
export const REPORT_RESOURCES_MAX = 1_024;
/** Modules one report says run. */
export const REPORT_RUNNING_MAX = 256;
/** A reason as a person reads it (a command's output is cut to its tail before this, outcome.ts). */
export const REASON_MAX = 1_024;
/** A node's, a module's or a resource kind's name (names are 31 at most when made; older ones, 63). */
export const REPORT_NAME_MAX = 63;
/** A resource key, `<module>/<name>`. */
export const RESOURCE_KEY_MAX = 128;
/** A declaration's digest, `sha256:<64 hex>`, with room to spare. */
export const DIGEST_MAX = 80;
/** An artifact's reference (a registry, a name and a digest). */
export const ARTIFACT_MAX = 512;
/** Capabilities one heartbeat may name. */
export const CAPABILITIES_MAX = 32;
/** A capability is a resource kind's name: this closed grammar, no longer than this. */
export const CAPABILITY_PATTERN = /^[a-z][a-z0-9-]*$/;
export const CAPABILITY_MAX = 32;

export const boundedName = z.string().min(1).max(REPORT_NAME_MAX);
export const boundedReason = z.string().max(REASON_MAX);
export const capabilityName = z
  .string()
  .max(CAPABILITY_MAX, `a capability is at most ${CAPABILITY_MAX} characters`)
  .regex(CAPABILITY_PATTERN, 'a capability is a resource kind: lower-case letters, digits and -, starting with a letter');

/** Why a message of `bytes` is too large to read, or undefined when it is not. */
export const oversized = (what: 'report' | 'heartbeat', bytes: number): string | undefined => {
  const max = what === 'report' ? REPORT_MAX_BYTES : HEARTBEAT_MAX_BYTES;
  return bytes > max ? `a ${what} of ${bytes} bytes: at most ${max} are read` : undefined;
};

/** `text` cut to `max` characters, saying it was cut. */
export const clip = (text: string, max = REASON_MAX): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

/** A zod error in one line: each problem with where it is, the first few of them. */
export const issuesLine = (error: z.ZodError): string => {
  const shown = error.issues.slice(0, 3).map((issue) => `${issue.path.map(String).join('.') || '(the message)'}: ${issue.message}`);
  return `${shown.join('; ')}${error.issues.length > 3 ? ` (and ${error.issues.length - 3} more)` : ''}`;
};
