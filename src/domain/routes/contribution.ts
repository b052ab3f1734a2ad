import { z } from 'zod';

// A route a module contributes (ADR 0007: a route is a grant; ADR 0108: it carries the policy for
// requests at its name). The module names the route and the port it listens on; the holder of
// mesh-proxy hands back the public name, `<name>.<the node's public domain>`. The policy set is
// closed at four — a fifth is an amendment to ADR 0108, not a field added here.

export const POLICY_KINDS = ['authentication', 'refuse', 'path', 'redirect'] as const;
export const POLICY_KINDS_TEXT = 'authentication, refuse (a refusal on a path), path (path-scoped routing with priority), redirect';

/**
 * A priority is any whole number JSON and the routes file carry exactly: ±(2^53 − 1). Issue 116 of
 * the seeds: a priority read with the port reader (1–65535) turned the one real rule, declared at
 * 100000, into 0 — so nothing narrower than the numbers the file can hold is accepted, and
 * nothing wider, which a reader would round.
 */
export const PRIORITY_MIN = Number.MIN_SAFE_INTEGER;
export const PRIORITY_MAX = Number.MAX_SAFE_INTEGER;
const PRIORITY_RANGE = `a priority is a whole number from ${PRIORITY_MIN} to ${PRIORITY_MAX} (±(2^53 − 1)): every integer JSON and the routes file carry exactly, so 100000 stays 100000 end to end`;
// zod's int() is exactly the safe integers: a fraction and anything past ±(2^53 − 1) fail it, once.
export const prioritySchema = z.number({ error: `${PRIORITY_RANGE}, written as a number, not text` }).int({ error: PRIORITY_RANGE });

const label = z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'a route name is one DNS label: lower-case letters, digits and -, at most 63');
const location = z.string().regex(/^\/[^\s?#]*$/, 'a path starts with / and has no space, ? or #');

/** The credential fields an authentication policy must never carry (ADR 0108, R108.2): it names a secret. */
export const CREDENTIAL_FIELDS = ['password', 'hash', 'credential', 'value', 'user', 'users', 'token', 'htpasswd', 'basicAuth'];

export const policySchema = z.discriminatedUnion(
  'kind',
  [
    /** requests must present the credential held in this secret requirement (answered by mesh-vault) */
    z.strictObject({ kind: z.literal('authentication'), secret: z.string().min(1) }),
    /** requests under `path` on this route's host are refused outright (R108.4) */
    z.strictObject({ kind: z.literal('refuse'), path: location, priority: prioritySchema.default(0) }),
    /** requests under `path` go to `port` (a host port requirement; default the route's), ordered by priority */
    z.strictObject({ kind: z.literal('path'), path: location, priority: prioritySchema.default(0), port: z.string().min(1).optional() }),
    /** `<from>.<domain>` answers with a redirect to this route's public URL (a `www` name onto its apex) */
    z.strictObject({ kind: z.literal('redirect'), from: label, status: z.union([z.literal(301), z.literal(302), z.literal(307), z.literal(308)]).default(308) }),
  ],
  { error: (issue) => (issue.code === 'invalid_union' ? `a route policy is one of four (ADR 0108): ${POLICY_KINDS_TEXT}; a fifth is an amendment to ADR 0108` : undefined) },
);

export const routeSchema = z.strictObject({
  /** the name the module wants: its public name is `<name>.<domain>`, and `${route:<name>}` its URL */
  name: label,
  /** the host port requirement the module listens on */
  port: z.string().min(1),
  /** the path prefix the route serves on its host */
  location: location.default('/'),
  priority: prioritySchema.default(0),
  policy: z.array(policySchema).default([]),
});

export type RouteContribution = z.infer<typeof routeSchema>;
export type RoutePolicy = z.infer<typeof policySchema>;
