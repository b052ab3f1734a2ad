import type pg from 'pg';
import type { DeclarationPublisher } from '../declaration-publisher.js';
import type { LogHold, MeshService } from '../mesh-service.js';
import { readNodeStatus } from '../node-status.js';
import { nodesUnknownLine, overviewMeshOf, overviewOf, type HeldReader, type Overview, type OverviewMesh, type ProjectionHealthInput } from '../overview.js';
import { unreachableLine, type StoreHealth } from '../store-watch.js';

// Gathers what the overview is judged from: the mesh (as the controller's fold of the log says it
// is now, or as the projections hold it), what each node was last told (NODES) and last said (the
// controller's node status), and the projections' health when known.

export interface OverviewSourceOptions {
  mesh: MeshService;
  publisher: DeclarationPublisher;
  pool: pg.Pool;
  statusSchema: string;
  heartbeatThresholdMs: number;
  /** the wire's subject prefix, for the subjects a dangling consume names */
  prefix?: string;
  projections?: () => Promise<ProjectionHealthInput[]>;
  /** this process's other readers of the log that are held at a commit */
  holds?: () => HeldReader[];
  /** what the controller knows of PostgreSQL (store-watch.ts), to name an outage with its start */
  store?: () => StoreHealth | undefined;
}

/** The readers among `readers` that the log holds at a commit. */
export const heldReaders = (readers: Record<string, LogHold | undefined>): HeldReader[] =>
  Object.entries(readers).flatMap(([reader, hold]) => (hold ? [{ reader, seq: hold.seq, aggregate: hold.aggregate, problem: hold.problem, since: hold.since.toISOString() }] : []));

export const overviewSource = (options: OverviewSourceOptions) => async (): Promise<Overview & { unknown: string[] }> => {
  // The mesh as far as the log can be read: a commit that does not verify holds the fold there,
  // and the overview still answers, naming it.
  const { state, held } = await options.mesh.view();
  const holds = [...heldReaders({ 'the controller': held }), ...(options.holds?.() ?? [])];
  return overviewOfMesh({ ...options, mesh: overviewMeshOf(state, options.prefix), holds });
};

/** How many nodes' declarations are read from NODES at once. */
const HEADS_IN_FLIGHT = 32;

/** The overview of `mesh`, with what NODES says each node was last told and what node status says it last said. */
export const overviewOfMesh = async (
  options: Omit<OverviewSourceOptions, 'mesh' | 'holds'> & { mesh: OverviewMesh; holds: HeldReader[] },
): Promise<Overview & { unknown: string[] }> => {
  const unknown: string[] = [];
  const declared = new Map<string, { sequence: number; digest: string; derivedFromSeq: number }>();
  // One NODES read per node, HEADS_IN_FLIGHT at a time on the one connection: a request waits for
  // the server, not for the node before it (one after another, 50 nodes took 50 round trips).
  const names = options.mesh.nodes.map((node) => node.name);
  let next = 0;
  const reader = async (): Promise<void> => {
    for (let name = names[next++]; name !== undefined; name = names[next++]) {
      const head = await options.publisher.lastPublished(name, { fresh: true });
      if (head) declared.set(name, { sequence: head.sequence, digest: head.digest, derivedFromSeq: head.derivedFromSeq });
    }
  };
  await Promise.all(Array.from({ length: Math.min(HEADS_IN_FLIGHT, names.length) }, reader));
  // Why PostgreSQL did not answer: the outage and its start when the controller has seen it.
  const why = (error: unknown): string => {
    const store = options.store?.();
    return store?.reachable === false ? unreachableLine(store) : `PostgreSQL did not answer (${(error as Error).message})`;
  };
  let nodes: Awaited<ReturnType<typeof readNodeStatus>> = [];
  let nodesUnknown: string | undefined;
  try {
    nodes = await readNodeStatus(options.pool, options.statusSchema);
  } catch (error) {
    nodesUnknown = why(error);
    unknown.push(nodesUnknownLine(nodesUnknown));
  }
  let projections: ProjectionHealthInput[] | undefined;
  try {
    projections = await options.projections?.();
  } catch (error) {
    unknown.push(`the projections' state is not known: ${why(error)}`);
  }
  const result = overviewOf({
    mesh: options.mesh,
    nodes,
    ...(nodesUnknown !== undefined ? { nodesUnknown } : {}),
    declared,
    now: new Date(),
    heartbeatThresholdMs: options.heartbeatThresholdMs,
    holds: options.holds,
    ...(projections ? { projections } : {}),
  });
  return { ...result, healthy: result.healthy && unknown.length === 0, problems: [...unknown.filter((line) => !result.problems.includes(line)), ...result.problems], unknown };
};
