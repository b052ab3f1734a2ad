import { DEFAULT_NODE_ROOT } from '../../domain/nodes/events.js';
import { foldingProjection } from './folding.js';
import type { ReadViews } from './read-views.js';
import { RowImage } from './rows.js';

// `nodes` and `enrolment_tokens`, as evolveMesh folds node.added, enrolment.token-issued,
// node.enrolled, node.cordoned, node.uncordoned and node.removed: adding a node states its root and
// address (an enrolled node keeps its key; a removed one comes back as a new machine); enrolling
// gives it its key, adding it with the default root when it was never added, and spends the token;
// a removed node's row stays, marked with when it was removed, and the tokens made for it or spent
// by it are retired with it.

export interface NodeRow extends Record<string, unknown> {
  name: string;
  root: string;
  address: string | null;
  public_key: string | null;
  enrolled_at: string | Date | null;
  cordoned: boolean;
  removed_seq: number | string | null;
  removed_at: string | Date | null;
  changed_seq: number | string;
}

export interface TokenRow extends Record<string, unknown> {
  token_id: string;
  node: string | null;
  expires_at: string;
  spent_by: string | null;
  retired_with: string | null;
  issued_seq: number | string;
}

interface Batch {
  nodes: RowImage<NodeRow>;
  tokens: RowImage<TokenRow>;
}

export const nodesProjection = foldingProjection<Batch>({
  name: 'nodes',
  version: 2,
  types: ['node.added', 'node.enrolled', 'enrolment.token-issued', 'node.cordoned', 'node.uncordoned', 'node.removed'],
  open: async (events, tx) => {
    const batch = { nodes: new RowImage<NodeRow>('nodes', ['name']), tokens: new RowImage<TokenRow>('enrolment_tokens', ['token_id']) };
    await batch.nodes.load(tx, events.flatMap((e) => (e.type.startsWith('node.') && 'node' in e.data ? [{ name: e.data.node }] : [])));
    const removed = events.flatMap((e) => (e.type === 'node.removed' ? [e.data.node] : []));
    const retiring =
      removed.length === 0
        ? []
        : (await tx.client.query<{ token_id: string }>(`SELECT token_id FROM ${tx.table('enrolment_tokens')} WHERE node = ANY($1) OR spent_by = ANY($1)`, [removed])).rows;
    await batch.tokens.load(tx, [...events.flatMap((e) => (e.type === 'node.enrolled' ? [{ token_id: e.data.tokenId }] : [])), ...retiring]);
    return batch;
  },
  apply: (batch, event) => {
    switch (event.type) {
      case 'node.added': {
        const data = event.data;
        const node = batch.nodes.get({ name: data.node });
        const kept = node && node.removed_seq === null ? node : undefined;
        batch.nodes.set({ name: data.node, root: data.root, address: data.address, public_key: kept?.public_key ?? null, enrolled_at: kept?.enrolled_at ?? null, cordoned: kept?.cordoned ?? false, removed_seq: null, removed_at: null, changed_seq: event.seq });
        break;
      }
      case 'enrolment.token-issued': {
        const data = event.data;
        batch.tokens.set({ token_id: data.tokenId, node: data.node, expires_at: data.expiresAt, spent_by: null, retired_with: null, issued_seq: event.seq });
        break;
      }
      case 'node.enrolled': {
        const data = event.data;
        const token = batch.tokens.get({ token_id: data.tokenId });
        if (token) batch.tokens.set({ ...token, spent_by: data.node });
        const node = batch.nodes.get({ name: data.node });
        const kept = node && node.removed_seq === null ? node : undefined;
        batch.nodes.set({ name: data.node, root: kept?.root ?? DEFAULT_NODE_ROOT, address: kept?.address ?? null, public_key: data.publicKey, enrolled_at: event.time, cordoned: kept?.cordoned ?? false, removed_seq: null, removed_at: null, changed_seq: event.seq });
        break;
      }
      case 'node.cordoned':
      case 'node.uncordoned': {
        const node = batch.nodes.get({ name: event.data.node });
        if (node && node.removed_seq === null) batch.nodes.set({ ...node, cordoned: event.type === 'node.cordoned', changed_seq: event.seq });
        break;
      }
      case 'node.removed': {
        const name = event.data.node;
        const node = batch.nodes.get({ name });
        if (node && node.removed_seq === null) batch.nodes.set({ ...node, cordoned: false, removed_seq: event.seq, removed_at: event.time, changed_seq: event.seq });
        for (const token of batch.tokens.where((t) => t.node === name || t.spent_by === name)) batch.tokens.set({ ...token, retired_with: name });
        break;
      }
      default:
        break;
    }
  },
  save: async (batch, tx) => {
    await batch.nodes.save(tx);
    await batch.tokens.save(tx);
  },
});

export interface NodeRecord {
  name: string;
  root: string;
  address: string | null;
  public_key: string | null;
  enrolled_at: Date | null;
  cordoned: boolean;
  /** the log sequence it was removed at, when it was; null: it is in the mesh */
  removed_seq: string | null;
  removed_at: Date | null;
}

/** One node as `mesh node show` tells it, a removed one too. */
export const readNode = async ({ db, view }: ReadViews, name: string): Promise<NodeRecord | undefined> =>
  (await db.query<NodeRecord>(`SELECT name, root, address, public_key, enrolled_at, cordoned, removed_seq, removed_at FROM ${view('nodes')} WHERE name = $1`, [name])).rows[0];

/** Every node's name in the mesh (not those removed), in name order. */
export const nodeNames = async ({ db, view }: ReadViews): Promise<string[]> => (await db.query<{ name: string }>(`SELECT name FROM ${view('nodes')} WHERE removed_seq IS NULL ORDER BY name`)).rows.map((r) => r.name);

/** Every node in the mesh with where it is reached. */
export const readNodeAddresses = async ({ db, view }: ReadViews): Promise<{ name: string; address: string | null }[]> =>
  (await db.query<{ name: string; address: string | null }>(`SELECT name, address FROM ${view('nodes')} WHERE removed_seq IS NULL ORDER BY name`)).rows;

/**
 * Every node in the mesh, whether an agent has enrolled as it, whether it is cordoned, and the
 * modules assigned to it (from the assignments projection, when it serves; none otherwise), in
 * name order.
 */
export const readNodesWithModules = async ({ db, view }: ReadViews, options: { assignments: boolean }): Promise<{ name: string; root: string; enrolled: boolean; cordoned: boolean; modules: string[] }[]> =>
  (
    await db.query<{ name: string; root: string; enrolled: boolean; cordoned: boolean; modules: string[] }>(
      `SELECT n.name, n.root, n.public_key IS NOT NULL AS enrolled, n.cordoned,
              ${options.assignments ? `coalesce((SELECT array_agg(a.module ORDER BY a.module) FROM ${view('assignments')} a WHERE a.node = n.name), '{}')` : `'{}'::text[]`} AS modules
         FROM ${view('nodes')} n WHERE n.removed_seq IS NULL ORDER BY n.name`,
    )
  ).rows;
