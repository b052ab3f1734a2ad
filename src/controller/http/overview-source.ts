import type pg from 'pg';
import type { DeclarationPublisher } from '../declaration-publisher.js';
import type { MeshService } from '../mesh-service.js';
import { readNodeStatus } from '../node-status.js';
import { overview, type Overview, type ProjectionHealthInput } from '../overview.js';

// Gathers what the overview is judged from: the mesh as the log says it is now, what each node was
// last told and last said, and the projections' health when known.

export interface OverviewSourceOptions {
  mesh: MeshService;
  publisher: DeclarationPublisher;
  pool: pg.Pool;
  statusSchema: string;
  heartbeatThresholdMs: number;
  projections?: () => Promise<ProjectionHealthInput[]>;
}

export const overviewSource = (options: OverviewSourceOptions) => async (): Promise<Overview & { unknown: string[] }> => {
  const unknown: string[] = [];
  const state = await options.mesh.current();
  const declared = new Map<string, { sequence: number; digest: string; derivedFromSeq: number }>();
  for (const node of state.nodes.keys()) {
    const head = await options.publisher.lastPublished(node, { fresh: true });
    if (head) declared.set(node, { sequence: head.sequence, digest: head.digest, derivedFromSeq: head.derivedFromSeq });
  }
  let nodes: Awaited<ReturnType<typeof readNodeStatus>> = [];
  try {
    nodes = await readNodeStatus(options.pool, options.statusSchema);
  } catch (error) {
    unknown.push(`what nodes last said is unknown: PostgreSQL did not answer (${(error as Error).message})`);
  }
  let projections: ProjectionHealthInput[] | undefined;
  try {
    projections = await options.projections?.();
  } catch (error) {
    unknown.push(`the projections' state is unknown: ${(error as Error).message}`);
  }
  const result = overview({ state, nodes, declared, now: new Date(), heartbeatThresholdMs: options.heartbeatThresholdMs, ...(projections ? { projections } : {}) });
  return { ...result, healthy: result.healthy && unknown.length === 0, problems: [...unknown, ...result.problems], unknown };
};
