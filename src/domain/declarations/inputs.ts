import type { StoredMeshEvent } from '../registry.js';
import { assignmentsOn } from '../assignments/state.js';
import { manifestOf } from '../catalogue/state.js';
import type { MeshState } from '../mesh/state.js';
import { nodeNamed } from '../nodes/state.js';
import { seatById, seatNamed } from '../seats/state.js';
import { PROXY_SEAT, proxyHolder } from '../routes/grants.js';
import { rosterListsRead } from './roster.js';
import { hasGrants } from '../routes/state.js';
import { perConsumerProvider } from '../secrets/wanted.js';
import { secretNamed } from '../secrets/state.js';
import type { AssignmentState } from '../assignments/state.js';

// Which nodes' declarations an event can change, as a controller-runtime reconciler maps a watched
// object to the keys it enqueues. A node's declaration is composed from its own record (root,
// address), the modules assigned to it (their manifests and deployed artifacts), and, for each of
// their requirements, the providers of the contract it names and the holders of the seats that
// deliver it — and, one level on, what those providers answer with. Each composition records the
// inputs it read (`record`); an event names the inputs it changes (`touched`); the nodes that read
// any of them are composed again, and no other. An event that changes no input (a fact, an
// operator, a refusal stated) marks nothing.

const nodeKey = (node: string): string => `node:${node}`;
const MODULE = 'module:';
const moduleKey = (module: string): string => `${MODULE}${module}`;
const provisionKey = (provision: string): string => `provision:${provision}`;
const seatKey = (seat: string): string => `seat:${seat}`;
/** every route of the mesh: what the routes file on mesh-proxy's node is composed from */
const ROUTES = 'routes';
/** the mesh's trust root, read by every node with a trust anchor */
const TRUST_ROOT = 'trust:root';
/** the machines of the mesh, read by every node with a roster block (ADR 0120; roster.ts) */
const MACHINES = 'roster:machines';

/** What one event changes among the declarations' inputs: nodes to compose again, inputs whose readers must be, or everything. */
export interface Touched {
  nodes: string[];
  inputs: string[];
  all: boolean;
}

const NOTHING: Touched = { nodes: [], inputs: [], all: false };

export class DeclarationInputs {
  /** node → the inputs its last composition read */
  private readonly readBy = new Map<string, Set<string>>();
  /** input → the nodes whose last composition read it */
  private readonly readers = new Map<string, Set<string>>();
  /** module → the provisions its manifest provided when last seen, so a registration that drops one still reaches its consumers */
  private readonly provided = new Map<string, string[]>();
  /** consumer assignment → the nodes of the providers that apply its per-consumer secrets */
  private readonly appliers = new Map<string, string[]>();
  /** node → where it was last placed, so a node added again somewhere else is told apart from a new one */
  private readonly placed = new Map<string, { address: string | null; root: string }>();

  /** Records what composing `node` reads in `state` now. */
  record(state: MeshState, node: string): void {
    const inputs = new Set<string>([nodeKey(node)]);
    for (const assignment of assignmentsOn(state.assignments, node)) {
      inputs.add(moduleKey(assignment.module));
      const manifest = manifestOf(state.catalogue, assignment.module);
      if ((manifest?.resources.trustAnchors.length ?? 0) > 0) inputs.add(TRUST_ROOT);
      // A roster of machines reads the nodes; of names, the public names too, at the proxy's address.
      const lists = new Set([...(manifest?.resources.files ?? []), ...(manifest?.resources.regions ?? [])].flatMap((r) => rosterListsRead(r.template)));
      if (lists.size > 0) inputs.add(MACHINES);
      if (lists.has('names')) inputs.add(ROUTES).add(seatKey(seatNamed(state.seats, PROXY_SEAT)?.id ?? PROXY_SEAT));
      for (const requirement of manifest?.requires ?? []) {
        inputs.add(provisionKey(requirement.contract));
        if (requirement.seat) inputs.add(seatKey(seatNamed(state.seats, requirement.seat)?.id ?? requirement.seat));
      }
      // The seats this module holds are named in the declaration.
      for (const claim of manifest?.canHold ?? []) {
        const seat = typeof claim === 'string' ? claim : claim.seat;
        inputs.add(seatKey(seatNamed(state.seats, seat)?.id ?? seat));
      }
    }
    // The routes file reads every granted route, and the vault that answers their secrets.
    if (proxyHolder(state)?.node === node) {
      inputs.add(ROUTES).add(provisionKey('secret'));
      const vault = seatNamed(state.seats, 'mesh-vault');
      if (vault) inputs.add(seatKey(vault.id));
    }
    this.forget(node);
    this.readBy.set(node, inputs);
    for (const input of inputs) {
      let nodes = this.readers.get(input);
      if (!nodes) this.readers.set(input, (nodes = new Set()));
      nodes.add(node);
    }
  }

  forget(node: string): void {
    for (const input of this.readBy.get(node) ?? []) {
      const nodes = this.readers.get(input);
      nodes?.delete(node);
      if (nodes?.size === 0) this.readers.delete(input);
    }
    this.readBy.delete(node);
  }

  /** The nodes whose declarations `touched` reaches, given the state the event was folded into. */
  nodesReached(state: MeshState, touched: Touched): Set<string> {
    const reached = new Set<string>(touched.nodes);
    for (const input of touched.inputs) for (const node of this.readers.get(input) ?? []) reached.add(node);
    // One level on: a provider's answers are filled from its own node and requirements, so what
    // reaches a node reaches the consumers of what its modules provide.
    for (const node of [...reached]) {
      for (const input of this.readBy.get(node) ?? []) {
        if (!input.startsWith(MODULE)) continue;
        for (const provision of this.provisionsOf(state, input.slice(MODULE.length))) for (const consumer of this.readers.get(provisionKey(provision)) ?? []) reached.add(consumer);
      }
    }
    return reached;
  }

  /** What `event`, just folded into `state`, changes among the declarations' inputs. */
  touched(state: MeshState, event: StoredMeshEvent): Touched {
    switch (event.type) {
      case 'assignment.created':
      case 'assignment.removed': {
        const data = event.data;
        // A provider that makes this consumer a secret applies it: its node is declared it too (and undeclared it).
        const key = `${data.node}/${data.module}`;
        const appliers = event.type === 'assignment.created' ? secretAppliersOf(event.data) : (this.appliers.get(key) ?? []);
        if (event.type === 'assignment.created' && appliers.length > 0) this.appliers.set(key, appliers);
        else this.appliers.delete(key);
        return { nodes: [data.node, ...appliers], inputs: [...this.provisionsOf(state, data.module).map(provisionKey), ...(this.routesOf(state, data.module) ? [ROUTES] : [])], all: false };
      }
      case 'route.public-name-granted':
        // `${route:…}` of the module on its node, and the routes file.
        return { nodes: [event.data.node], inputs: [ROUTES], all: false };
      case 'node.public-domain-set':
        // `${route:…}` of its modules waits for names under the new domain; the routes file asks for them.
        return { nodes: [event.data.node], inputs: [ROUTES], all: false };
      case 'consumer.answered':
        // `${bound:…}` of the consumer it answers.
        return { nodes: [event.data.consumer.node], inputs: [], all: false };
      case 'module.registered': {
        const module = event.data.module;
        const before = this.provided.get(module) ?? [];
        const now = this.provisionsOf(state, module, true);
        const seats = manifestOf(state.catalogue, module)?.seats.map((s) => seatKey(seatNamed(state.seats, s.name)?.id ?? s.name)) ?? [];
        return { nodes: [], inputs: [moduleKey(module), ...[...new Set([...before, ...now])].map(provisionKey), ...seats, ...(this.routesOf(state, module) ? [ROUTES] : [])], all: false };
      }
      case 'seat.defined':
      case 'seat.renamed': {
        const seat = event.data.seat;
        const delivers = seatById(state.seats, seat)?.delivers;
        return { nodes: [], inputs: [seatKey(seat), ...(delivers ? [provisionKey(delivers)] : [])], all: false };
      }
      case 'seat.held':
      case 'seat.handed-over':
      case 'seat.released': {
        const data = event.data;
        const delivers = seatById(state.seats, data.seat)?.delivers;
        const nodes = 'to' in data ? [data.to.node, ...(data.from ? [data.from.node] : [])] : [data.node];
        return { nodes, inputs: [seatKey(data.seat), ...(delivers ? [provisionKey(delivers)] : [])], all: false };
      }
      case 'node.added': {
        const node = event.data.node;
        const now = nodeNamed(state.nodes, node);
        const placed = this.placed.get(node);
        this.placed.set(node, { address: now?.address ?? null, root: now?.root ?? '' });
        // A node's address and root reach whoever is answered by its modules: rare, so everyone.
        const moved = placed !== undefined && (placed.address !== (now?.address ?? null) || placed.root !== (now?.root ?? ''));
        return { nodes: [node], inputs: [MACHINES], all: moved };
      }
      case 'node.removed':
        return { nodes: [event.data.node], inputs: [MACHINES], all: false };
      case 'node.enrolled':
      case 'fact.capabilities':
        return { nodes: [event.data.node], inputs: [], all: false };
      case 'build.succeeded':
      case 'module.rollout-set':
      case 'module.version-deployed': {
        // What a module runs is the artifact deployed for it.
        const module = event.data.module;
        return { nodes: [], inputs: [moduleKey(module)], all: false };
      }
      case 'trust.root-set':
        return { nodes: [], inputs: [TRUST_ROOT], all: false };
      case 'secret.rotation-started':
      case 'secret.rotation-made':
      case 'secret.rotation-applied':
      case 'secret.rotation-confirmed':
      case 'secret.rotation-retired':
      case 'secret.rotation-abandoned':
      case 'secret.rotation-reverted': {
        // Which versions are placed where: every node the secret goes to, and the rotation's parties.
        const secret = secretNamed(state.secrets, event.data.secret);
        const parties = secret?.rotation ? [...secret.rotation.appliers, ...secret.rotation.readers].map((p) => p.node) : [];
        return { nodes: [...new Set([...(secret?.recipients ?? []), ...parties])], inputs: [], all: false };
      }
      default:
        return NOTHING;
    }
  }

  /** Whether a module contributes routes, or was granted names for some (a definition that dropped them still changes the file). */
  private routesOf(state: MeshState, module: string): boolean {
    if ((manifestOf(state.catalogue, module)?.routes ?? []).length > 0) return true;
    return hasGrants(state.routes, module);
  }

  private provisionsOf(state: MeshState, module: string, remember = false): string[] {
    const provisions = manifestOf(state.catalogue, module)?.provides.map((p) => p.provision) ?? this.provided.get(module) ?? [];
    if (remember || !this.provided.has(module)) this.provided.set(module, provisions);
    return provisions;
  }
}

/** The nodes of the providers that apply a consumer's per-consumer secrets. */
const secretAppliersOf = (assignment: AssignmentState): string[] =>
  assignment.resolutions.flatMap((resolution) => {
    if (resolution.answer.kind !== 'secret') return [];
    const provider = perConsumerProvider(assignment, { ...resolution, answer: resolution.answer });
    return provider && provider.node !== assignment.node ? [provider.node] : [];
  });
