import { defineSlice } from '../slice.js';
import { DEFAULT_NODE_ROOT } from './events.js';

// Nodes and their enrolment: where each node keeps modules, where others reach it, the keys it
// enrolled with, and the tokens that let a machine join (each spent once).

export interface NodeState {
  name: string;
  root: string;
  /** where other nodes reach it; its name when none was given */
  address: string | null;
  /** the agent's public key, once the node has enrolled */
  publicKey?: string;
  /** the host's identity on the bus (ed25519), once enrolled; absent for nodes enrolled before identities */
  busKey?: string;
  /** takes no new assignment while set (node.cordoned); what it runs keeps running */
  cordoned?: true;
  /** the domain its public names are under (node.public-domain-set) */
  publicDomain?: string;
}

export interface EnrolmentTokenState {
  tokenId: string;
  verifier: string;
  node: string | null;
  expiresAt: string;
  spentBy?: string;
  /** the identity a joining agent reaches the bus as, derived from the token's secret */
  publicKey?: string;
  /** the node it was made for, or spent by, was removed: it enrols nobody and is no bus user */
  retiredWith?: string;
}

export interface NodesState {
  byName: Map<string, NodeState>;
  tokens: Map<string, EnrolmentTokenState>;
}

export const nodesSlice = defineSlice({
  eventTypes: ['node.added', 'enrolment.token-issued', 'node.enrolled', 'node.cordoned', 'node.uncordoned', 'node.removed', 'node.public-domain-set'] as const,
  empty: (): NodesState => ({ byName: new Map(), tokens: new Map() }),
  evolve(state, event) {
    switch (event.type) {
      case 'node.added': {
        const data = event.data;
        state.byName.set(data.node, { ...state.byName.get(data.node), name: data.node, root: data.root, address: data.address });
        break;
      }
      case 'enrolment.token-issued': {
        const data = event.data;
        state.tokens.set(data.tokenId, { tokenId: data.tokenId, verifier: data.verifier, node: data.node, expiresAt: data.expiresAt, ...(data.publicKey ? { publicKey: data.publicKey } : {}) });
        break;
      }
      case 'node.enrolled': {
        const data = event.data;
        const token = state.tokens.get(data.tokenId);
        if (token) token.spentBy = data.node;
        const node = state.byName.get(data.node) ?? { name: data.node, root: DEFAULT_NODE_ROOT, address: null };
        state.byName.set(data.node, { ...node, publicKey: data.publicKey, ...(data.busKey ? { busKey: data.busKey } : {}) });
        break;
      }
      case 'node.cordoned': {
        const node = state.byName.get(event.data.node);
        if (node) node.cordoned = true;
        break;
      }
      case 'node.uncordoned': {
        const node = state.byName.get(event.data.node);
        if (node) delete node.cordoned;
        break;
      }
      case 'node.public-domain-set': {
        const node = state.byName.get(event.data.node);
        if (node) node.publicDomain = event.data.domain;
        break;
      }
      case 'node.removed': {
        const removed = event.data.node;
        state.byName.delete(removed);
        for (const token of state.tokens.values()) if (token.node === removed || token.spentBy === removed) token.retiredWith = removed;
        break;
      }
      default:
        break;
    }
  },
});

export const nodeNamed = (state: NodesState, node: string): NodeState | undefined => state.byName.get(node);

/** Every node, in the order it was added or enrolled. */
export const allNodes = (state: NodesState): IterableIterator<NodeState> => state.byName.values();

export const enrolmentToken = (state: NodesState, tokenId: string): EnrolmentTokenState | undefined => state.tokens.get(tokenId);

export const allEnrolmentTokens = (state: NodesState): IterableIterator<EnrolmentTokenState> => state.tokens.values();
