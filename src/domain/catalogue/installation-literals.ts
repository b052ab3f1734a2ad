import type { MeshState } from '../mesh/state.js';
import { allNodes } from '../nodes/state.js';
import type { Problem } from '../refusal.js';

// ADR 0112, issue 122 of the seeds: a definition holds what is true of a module everywhere. Thirty
// of seventy-one definitions there named the one installation they were written in — a public
// domain, a node's name as a host, a routable address — because nothing else could say it; a second
// mesh installing them got the first mesh's names. What the module needs is a reference the mesh
// fills (`${route:web}`, `${identity.node}`, a requirement), so such a literal is refused where the
// manifest enters, naming the module, the key and the value.

type Raw = Record<string, unknown>;
const record = (value: unknown): Raw => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Raw) : {});
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** The values a module's software is told: resources, a provider's answers, operator defaults. Names and event names are the module's own. */
const sites = (raw: Raw): { what: string; value: string }[] => {
  const found: { what: string; value: string }[] = [];
  const walk = (what: string, value: unknown): void => {
    if (typeof value === 'string') found.push({ what, value });
    else if (Array.isArray(value)) value.forEach((v, i) => walk(`${what}.${i}`, v));
    else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(`${what}.${k}`, v);
  };
  walk('resources', raw.resources);
  list(raw.provides).forEach((p, i) => walk(`provides.${i}.answers`, record(p).answers));
  list(raw.requires).forEach((r, i) => walk(`requires.${i}.default`, record(r).default));
  return found;
};

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `example.org` or a name under it, as a whole DNS name. */
const domainIn = (value: string, domain: string): boolean => new RegExp(`(?<![a-z0-9-])(?:[a-z0-9-]+\\.)*${escape(domain)}(?![a-z0-9-])`).test(value.toLowerCase());

/** A node's name used as a host: a label of a dotted name, a URL's host, or before a port. */
const hostNamed = (value: string, node: string): boolean => {
  const n = escape(node);
  return new RegExp(`(?<![A-Za-z0-9_-])(?:${n}\\.[a-z]|[a-z0-9]\\.${n}(?![A-Za-z0-9_-])|(?<=//|@)${n}(?![A-Za-z0-9_.-])|${n}:\\d)`).test(value);
};

const IPV4 = /(?<![\d.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\d.])/g;

/** Addresses no packet from the internet reaches: private, loopback, link-local, shared, documentation, multicast and reserved. */
const isRoutable = ([a, b, c]: number[]): boolean => {
  if (a === undefined || b === undefined || c === undefined) return false;
  if (a === 0 || a === 10 || a === 127 || a >= 224) return false;
  if (a === 100 && b >= 64 && b <= 127) return false;
  if (a === 169 && b === 254) return false;
  if (a === 172 && b >= 16 && b <= 31) return false;
  if (a === 192 && b === 168) return false;
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return false;
  if (a === 198 && (b === 18 || b === 19)) return false;
  if ((a === 198 && b === 51 && c === 100) || (a === 203 && b === 0 && c === 113)) return false;
  return true;
};

const routableAddresses = (value: string): string[] =>
  [...value.matchAll(IPV4)].flatMap((m) => {
    const parts = m.slice(1, 5).map(Number);
    return parts.every((p) => p <= 255) && isRoutable(parts) ? [m[0]] : [];
  });

/** A node's address names this installation when it is a routable address or a DNS name; loopback and private ones are true of any machine. */
const isInstallationAddress = (address: string): boolean => {
  const ip = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (ip) return isRoutable(ip.slice(1, 5).map(Number));
  return address !== 'localhost' && address.includes('.');
};

const REMEDY = 'write what the mesh fills instead: ${route:NAME} for the module\'s own public URL, ${identity.node} / ${identity.address} for where it runs, or an operator requirement set at assignment (ADR 0112)';

export const installationLiteralProblems = (raw: Raw, module: string, state: MeshState): Problem[] => {
  const problems: Problem[] = [];
  const nodes = [...allNodes(state.nodes)];
  for (const { what, value } of sites(raw)) {
    const text = value.replace(/\$\{[^}]*\}/g, ' ');
    const findings: string[] = [];
    for (const node of nodes) {
      if (node.publicDomain && domainIn(text, node.publicDomain)) findings.push(`node ${node.name}'s public domain ${node.publicDomain}`);
      if (hostNamed(text, node.name)) findings.push(`the name of node ${node.name}, as a host`);
      if (node.address && isInstallationAddress(node.address) && node.address !== node.name && new RegExp(`(?<![A-Za-z0-9_.-])${escape(node.address)}(?![A-Za-z0-9_-]|\\.[A-Za-z0-9])`).test(text)) findings.push(`node ${node.name}'s address ${node.address}`);
    }
    for (const address of routableAddresses(text)) if (!findings.some((f) => f.endsWith(` ${address}`))) findings.push(`the routable address ${address}`);
    if (findings.length === 0) continue;
    problems.push({
      what,
      why: `${module}'s ${what} is "${value}", which names ${findings.join(' and ')}: a fact of this installation, which a definition never names (ADR 0112, issue 122)`,
      remedy: REMEDY,
    });
  }
  return problems;
};
