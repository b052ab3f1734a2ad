import type { MeshState } from '../mesh/state.js';
import { allNodes, nodeNamed } from '../nodes/state.js';
import { currentGrants, proxyHolder } from '../routes/grants.js';

// ADR 0120 of the seeds: a roster is the mesh's data in the module's format. The mesh hands a file
// or region template two lists and the template repeats a line over one of them:
//   ${each:machines} … ${end:each}   the nodes of the mesh (a resolver's own zone, issue 111)
//   ${each:names} … ${end:each}      every name the mesh serves: the machines, and each public name
//                                    at the address of the proxy that serves it (a hosts region)
// and inside a block `${entry:name}` and `${entry:address}` are the entry's. A repetition is the
// one thing a `${…}` reference cannot say (ADR 0120, option 2), so it is a block of its own, and the
// mesh knows no file format: the line is the module's.

export type RosterList = 'machines' | 'names';
export const ROSTER_LISTS: readonly RosterList[] = ['machines', 'names'];
export const ENTRY_FIELDS = ['name', 'address'] as const;

export interface RosterEntry {
  name: string;
  address: string;
}

export type Roster = Record<RosterList, RosterEntry[]>;

const byName = (a: RosterEntry, b: RosterEntry): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * The roster as the log says it is now. A node with no address of its own is left out of both
 * lists: a name that resolves to nothing here is a connection that hangs (ADR 0120), and a name
 * mapped to itself tells a resolver nothing. A public name is at the address of the node holding
 * mesh-proxy; none while nobody holds it, or its node has no address.
 */
export const rosterOf = (state: MeshState): Roster => {
  const machines = [...allNodes(state.nodes)].flatMap((node) => (node.address ? [{ name: node.name, address: node.address }] : [])).sort(byName);
  const proxy = proxyHolder(state);
  const proxyAddress = proxy ? nodeNamed(state.nodes, proxy.node)?.address : null;
  const served = proxyAddress ? currentGrants(state).map((grant) => ({ name: grant.publicName, address: proxyAddress })) : [];
  return { machines, names: [...machines, ...served].sort(byName) };
};

const TOKEN = /\$\{(each|entry|end):([^}]*)\}/g;

export interface RosterBlock {
  list: RosterList;
  /** the text repeated per entry */
  body: string;
  start: number;
  end: number;
}

/** The roster blocks of a template, or what is wrong with its `${each:…}`, `${entry:…}` and `${end:each}`. */
export const rosterBlocks = (text: string): { blocks: RosterBlock[]; problems: string[] } => {
  const blocks: RosterBlock[] = [];
  const problems: string[] = [];
  let open: { list: RosterList; start: number; bodyStart: number } | undefined;
  for (const match of text.matchAll(TOKEN)) {
    const [whole, kind, argument] = match;
    const at = match.index;
    if (kind === 'each') {
      if (!(ROSTER_LISTS as readonly string[]).includes(argument ?? '')) problems.push(`${whole} names no list of the roster: write \${each:machines} or \${each:names}`);
      else if (open) problems.push(`${whole} opens a block inside \${each:${open.list}}: blocks do not nest`);
      else open = { list: argument as RosterList, start: at, bodyStart: at + whole.length };
    } else if (kind === 'entry') {
      if (!(ENTRY_FIELDS as readonly string[]).includes(argument ?? '')) problems.push(`${whole} reads a field an entry lacks: write \${entry:name} or \${entry:address}`);
      else if (!open) problems.push(`${whole} stands outside any \${each:…} block, so there is no entry to read`);
    } else if (argument !== 'each') {
      problems.push(`${whole} closes nothing: a block ends with \${end:each}`);
    } else if (!open) {
      problems.push(`${whole} closes no \${each:…} block`);
    } else {
      blocks.push({ list: open.list, body: text.slice(open.bodyStart, at), start: open.start, end: at + whole.length });
      open = undefined;
    }
  }
  if (open) problems.push(`\${each:${open.list}} is never closed: end the block with \${end:each}`);
  return { blocks, problems };
};

/** The lists a template repeats over. */
export const rosterListsRead = (text: string): RosterList[] => [...new Set(rosterBlocks(text).blocks.map((b) => b.list))];

/** The template with each block repeated over its list; a template registration let through is well formed. */
export const expandRoster = (text: string, roster: Roster): string => {
  const { blocks } = rosterBlocks(text);
  if (blocks.length === 0) return text;
  let out = '';
  let from = 0;
  for (const block of blocks) {
    out += text.slice(from, block.start);
    for (const entry of roster[block.list]) out += block.body.replace(/\$\{entry:(name|address)\}/g, (_, field: 'name' | 'address') => entry[field]);
    from = block.end;
  }
  return out + text.slice(from);
};
