import { join } from 'node:path';
import { meshHome } from '../config.js';

// Where an agent finds its declarations and how patient it is. The subject prefix and the NODES
// stream name come from the environment so a test (or a second mesh on one bus) can use its own.

export interface AgentWire {
  /** subject prefix: `mesh` in production */
  prefix: string;
  /** the stream that keeps each node's newest declaration */
  nodesStream: string;
}

export const agentWire = (env: NodeJS.ProcessEnv = process.env): AgentWire => ({
  prefix: env.MESH_SUBJECT_PREFIX ?? 'mesh',
  nodesStream: env.MESH_NODES_STREAM ?? 'NODES',
});

/** An agent's state folder when none is given: beside the local stack's data, one per node. */
export const defaultStateDir = (node: string, env: NodeJS.ProcessEnv = process.env): string =>
  env.MESH_AGENT_STATE ?? join(meshHome(env), 'agent', node);

export interface AgentTimings {
  /** a reconcile pass runs at least this often, whatever happens on the bus */
  resyncMs: number;
  /** core-NATS heartbeat period */
  heartbeatMs: number;
  /** first delay before restarting a process that exited; doubles per restart in a row */
  restartBackoffMs: number;
  restartBackoffMaxMs: number;
  /** a process up this long has stopped crash-looping: its count starts again */
  stableMs: number;
  /** restarts in a row after which a process is reported crash-looping */
  crashLoopAfter: number;
  /** SIGTERM, then this long, then SIGKILL */
  stopGraceMs: number;
  /** a failed run-once step is tried again after this, doubling per failure */
  stepRetryMs: number;
  stepRetryMaxMs: number;
  /** a report that could not be published is tried again after this, doubling */
  reportRetryMs: number;
  reportRetryMaxMs: number;
  /** how long an answer (or silence) from the Docker engine is believed */
  dockerProbeMs: number;
  /** how often a process the agent did not spawn in this run (adopted) is checked for life */
  adoptedPollMs: number;
}

export const DEFAULT_TIMINGS: AgentTimings = {
  resyncMs: 30_000,
  heartbeatMs: 5_000,
  restartBackoffMs: 1_000,
  restartBackoffMaxMs: 60_000,
  stableMs: 10_000,
  crashLoopAfter: 3,
  stopGraceMs: 10_000,
  stepRetryMs: 10_000,
  stepRetryMaxMs: 600_000,
  reportRetryMs: 500,
  reportRetryMaxMs: 30_000,
  dockerProbeMs: 30_000,
  adoptedPollMs: 1_000,
};

/** base · 2^(attempt-1), capped: attempt 1 waits `base`. */
export const backoff = (attempt: number, baseMs: number, maxMs: number): number =>
  Math.min(maxMs, baseMs * 2 ** Math.max(0, Math.min(attempt - 1, 30)));
