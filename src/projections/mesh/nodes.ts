import { DEFAULT_NODE_ROOT } from '../../domain/nodes/events.js';
import { foldingProjection } from './folding.js';
import type { ReadViews } from './read-views.js';
import { RowImage } from './rows.js';

// `nodes` and `enrolment_tokens`, as evolveMesh folds node.added, enrolment.token-issued and
// node.enrolled: adding a node states its root and address (an enrolled node keeps its key);
// enrolling gives it its key, adding it with the default root when it was never added, and spends
// the token.

export interface NodeRow extends Record<string, unknown> {
  name: string;
  root: string;
  address: string | null;
  public_key: string | null;
  enrolled_at: string | Date | null;
  changed_seq: number | string;
}

export interface TokenRow extends Record<string, unknown> {
  token_id: string;
  node: string | null;
  expires_at: string;
  spent_by: string | null;
  issued_seq: number | string;
}

interface Batch {
  nodes: RowImage<NodeRow>;
  tokens: RowImage<TokenRow>;
}

export const nodesProjection = foldingProjection<Batch>({
  name: 'nodes',
  version: 1,
  types: ['node.added', 'node.enrolled', 'enrolment.token-issued'],
  open: async (events, tx) => {
    const batch = { nodes: new RowImage<NodeRow>('nodes', ['name']), tokens: new RowImage<TokenRow>('enrolment_tokens', ['token_id']) };
    await batch.nodes.load(tx, events.flatMap((e) => (e.type === 'node.added' || e.type === 'node.enrolled' ? [{ name: e.data.node }] : [])));
    await batch.tokens.load(tx, events.flatMap((e) => (e.type === 'node.enrolled' ? [{ token_id: e.data.tokenId }] : [])));
    return batch;
  },
  apply: (batch, event) => {
    switch (event.type) {
      case 'node.added': {
        const data = event.data;
        const node = batch.nodes.get({ name: data.node });
        batch.nodes.set({ name: data.node, root: data.root, address: data.address, public_key: node?.public_key ?? null, enrolled_at: node?.enrolled_at ?? null, changed_seq: event.seq });
        break;
      }
      case 'enrolment.token-issued': {
        const data = event.data;
        batch.tokens.set({ token_id: data.tokenId, node: data.node, expires_at: data.expiresAt, spent_by: null, issued_seq: event.seq });
        break;
      }
      case 'node.enrolled': {
        const data = event.data;
        const token = batch.tokens.get({ token_id: data.tokenId });
        if (token) batch.tokens.set({ ...token, spent_by: data.node });
        const node = batch.nodes.get({ name: data.node });
        batch.nodes.set({ name: data.node, root: node?.root ?? DEFAULT_NODE_ROOT, address: node?.address ?? null, public_key: data.publicKey, enrolled_at: event.time, changed_seq: event.seq });
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

/** One node as `mesh node show` tells it. */
export const readNode = async (
  { db, view }: ReadViews,
  name: string,
): Promise<{ name: string; root: string; address: string | null; public_key: string | null; enrolled_at: Date | null } | undefined> =>
  (await db.query<{ name: string; root: string; address: string | null; public_key: string | null; enrolled_at: Date | null }>(`SELECT name, root, address, public_key, enrolled_at FROM ${view('nodes')} WHERE name = $1`, [name])).rows[0];

/** Every node's name, in name order. */
export const nodeNames = async ({ db, view }: ReadViews): Promise<string[]> => (await db.query<{ name: string }>(`SELECT name FROM ${view('nodes')} ORDER BY name`)).rows.map((r) => r.name);

/** Every node with where it is reached. */
export const readNodeAddresses = async ({ db, view }: ReadViews): Promise<{ name: string; address: string | null }[]> =>
  (await db.query<{ name: string; address: string | null }>(`SELECT name, address FROM ${view('nodes')} ORDER BY name`)).rows;

/**
 * Every node, whether an agent has enrolled as it, and the modules assigned to it (from the
 * assignments projection, when it serves; none otherwise), in name order.
 */
export const readNodesWithModules = async ({ db, view }: ReadViews, options: { assignments: boolean }): Promise<{ name: string; root: string; enrolled: boolean; modules: string[] }[]> =>
  (
    await db.query<{ name: string; root: string; enrolled: boolean; modules: string[] }>(
      `SELECT n.name, n.root, n.public_key IS NOT NULL AS enrolled,
              ${options.assignments ? `coalesce((SELECT array_agg(a.module ORDER BY a.module) FROM ${view('assignments')} a WHERE a.node = n.name), '{}')` : `'{}'::text[]`} AS modules
         FROM ${view('nodes')} n ORDER BY n.name`,
    )
  ).rows;
