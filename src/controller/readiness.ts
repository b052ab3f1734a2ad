import type { LogHold } from './mesh-service.js';

// When the controller is ready to be sent traffic, as a kubelet's readiness probe asks (`/readyz`):
// its view has caught up with the log and is not held at a commit, and every projection has a
// build that serves, within `maxLagCommits` of the log's head, neither stalled nor "not moving".
// Catching up is not a problem, only not ready yet; liveness (`/healthz`) asks none of this.

export interface ReadinessSources {
  view: { isCaughtUp(): boolean; held(): LogHold | undefined; mesh(): { seq: number } };
  /** every projection build, as `projectionsStatus` reads them */
  projections: () => Promise<
    readonly { projection: string; status: string; checkpoint: number; headSeq: number; lagCommits: number; stall: { seq: number } | null; notMoving: unknown; problem: string | null }[]
  >;
  /** how many commits a serving build may be behind the log's head and still be ready */
  maxLagCommits: number;
}

export interface Readiness {
  ready: boolean;
  /** what is not ready, a sentence each; empty when ready */
  notReady: string[];
}

export const readiness = async (sources: ReadinessSources): Promise<Readiness> => {
  const notReady: string[] = [];
  const { view } = sources;
  const held = view.held();
  if (held) notReady.push(`the controller's view is held at log seq ${held.seq} (${held.aggregate}): ${held.problem}`);
  else if (!view.isCaughtUp()) notReady.push(`the controller's view has not caught up with the log yet (folded to seq ${view.mesh().seq})`);
  let builds;
  try {
    builds = await sources.projections();
  } catch (error) {
    notReady.push(`the projections' state cannot be read: ${(error as Error).message}`);
    builds = [];
  }
  for (const name of [...new Set(builds.map((b) => b.projection))].sort()) {
    const of = builds.filter((b) => b.projection === name);
    const serving = of.find((b) => b.status === 'serving');
    if (!serving) {
      const first = of[0];
      notReady.push(first?.problem ?? `${name} has no build that serves yet (${of.map((b) => `${b.status} at seq ${b.checkpoint}`).join(', ')})`);
    } else if (serving.stall || serving.notMoving) {
      notReady.push(serving.problem ?? `${name} is stalled at seq ${serving.stall?.seq}`);
    } else if (serving.lagCommits > sources.maxLagCommits) {
      notReady.push(`${name} is ${serving.lagCommits} commits behind the log (seq ${serving.checkpoint} of ${serving.headSeq}; ready within ${sources.maxLagCommits})`);
    }
  }
  return { ready: notReady.length === 0, notReady };
};
