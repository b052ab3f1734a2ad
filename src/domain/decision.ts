import type { MeshEvent } from './registry.js';

/** What a command decided: the events for the one aggregate it is about (none: nothing to change). */
export interface Decision {
  aggregate: string;
  /** typed by the mesh's event schemas; the log checks them against the same schemas when it appends them */
  events: MeshEvent[];
  /** what to tell the operator, e.g. "gitea registered as definition version 2" */
  summary: string;
}
