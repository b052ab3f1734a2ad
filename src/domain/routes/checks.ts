import type { Problem } from '../refusal.js';
import { CREDENTIAL_FIELDS, POLICY_KINDS_TEXT } from './contribution.js';

// Registration's rules for a manifest's routes (ADR 0108), read from the manifest as written so
// every problem is named at once beside the schema's own.

type Raw = Record<string, unknown>;
const record = (value: unknown): Raw => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Raw) : {});
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** `routes.N.policy.M`: where a credential field is explained by routeProblems rather than the schema. */
export const isPolicyPath = (path: string): boolean => /^routes\.\d+\.policy\.\d+$/.test(path);
export const isCredentialField = (key: string): boolean => CREDENTIAL_FIELDS.includes(key);

export const routeProblems = (raw: Raw): Problem[] => {
  const problems: Problem[] = [];
  const requirements = new Map(list(raw.requires).flatMap((r) => (text(record(r).name) ? [[text(record(r).name) as string, record(r)] as const] : [])));
  const ports = [...requirements].filter(([, r]) => r.provider === 'host' && r.contract === 'port').map(([name]) => name);
  const secrets = [...requirements].filter(([, r]) => r.contract === 'secret').map(([name]) => name);
  const isPort = (name: string | undefined) => name !== undefined && ports.includes(name);
  const names = new Map<string, string>();
  list(raw.routes).forEach((r, i) => {
    const route = record(r);
    const at = `routes.${i}`;
    const name = text(route.name);
    if (name) {
      const first = names.get(name);
      if (first) problems.push({ what: `${at}.name`, why: `"${name}" is also ${first}: each name is one public name`, remedy: 'give each route and redirect its own name' });
      else names.set(name, `the name of ${at}`);
    }
    if (text(route.port) !== undefined && !isPort(text(route.port))) {
      problems.push({ what: `${at}.port`, why: `"${text(route.port)}" is not a host port requirement of this module, so the proxy has nowhere to send requests`, remedy: `name one of its host ports (${ports.join(', ') || 'none: add { "name": "http-port", "contract": "port", "provider": "host", "port": 8080 } to requires'})` });
    }
    // R108.3: the table is keyed by host and path with priority; two entries of one host with the
    // same path and priority would be ordered by nothing the operator wrote.
    const keys = new Map<string, string>();
    const claim = (path: unknown, priority: unknown, where: string): void => {
      const p = text(path) ?? '/';
      const n = typeof priority === 'number' ? priority : 0;
      const key = `${p} ${n}`;
      const other = keys.get(key);
      if (other) problems.push({ what: where, why: `path ${p} at priority ${n} is also ${other} on the same host: the pair is ambiguous (ADR 0108, R108.3)`, remedy: 'give one of them another priority or path' });
      else keys.set(key, where === at ? `the route's own location` : where);
    };
    claim(route.location, route.priority, at);
    let authentications = 0;
    list(route.policy).forEach((p, j) => {
      const policy = record(p);
      const where = `${at}.policy.${j}`;
      const credentials = Object.keys(policy).filter(isCredentialField);
      if (credentials.length > 0) {
        problems.push({
          what: where,
          why: `it carries ${credentials.join(', ')}: a route names a secret, never holds a credential — not a password, not a hash (ADR 0108, R108.2)`,
          remedy: 'require a secret ({ "name": "admin-login", "contract": "secret", "provider": "module", "seat": "mesh-vault" }) and write { "kind": "authentication", "secret": "admin-login" }',
        });
      }
      const kind = text(policy.kind);
      if (kind === 'authentication') {
        authentications++;
        const secret = text(policy.secret);
        if (secret !== undefined && !secrets.includes(secret)) {
          problems.push({ what: `${where}.secret`, why: `"${secret}" is not a secret requirement of this module, so nothing would deliver the credential`, remedy: `name one of its secret requirements (${secrets.join(', ') || 'none: add one answered by mesh-vault'})` });
        }
      } else if (kind === 'refuse' || kind === 'path') {
        claim(policy.path, policy.priority, where);
        if (kind === 'path' && text(policy.port) !== undefined && !isPort(text(policy.port))) {
          problems.push({ what: `${where}.port`, why: `"${text(policy.port)}" is not a host port requirement of this module`, remedy: `name one of its host ports (${ports.join(', ') || 'none'})` });
        }
      } else if (kind === 'redirect') {
        const from = text(policy.from);
        if (from) {
          const first = names.get(from);
          if (first) problems.push({ what: `${where}.from`, why: `"${from}" is also ${first}: each name is one public name`, remedy: 'redirect from a name no route of this module uses' });
          else names.set(from, `the name ${where} redirects from`);
        }
      }
    });
    if (authentications > 1) problems.push({ what: `${at}.policy`, why: 'it names more than one authentication: a request would be asked for two credentials', remedy: `keep one (the policy set is ${POLICY_KINDS_TEXT})` });
  });
  return problems;
};
