import { DEFAULT_NODE_ROOT } from '../../domain/nodes/events.js';
import { foldingProjection } from './folding.js';
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
