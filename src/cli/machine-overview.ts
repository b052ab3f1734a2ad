import { DeclarationPublisher } from '../controller/declaration-publisher.js';
import { overviewOfMesh } from '../controller/http/overview-source.js';
import { statusSchemaFromEnv } from '../controller/node-status.js';
import { heartbeatThresholdMs, type Overview } from '../controller/overview.js';
import { readOverviewMesh } from '../projections/mesh/overview.js';
import type { ReadSession } from './reads.js';

// What the machines are doing, for `mesh status` and `mesh node show`: the same judgement the
// controller's page makes — heard from when, which declaration applied, what is held, refused or
// crash-looping — read from the projections (the session has waited for them, OVERVIEW_PROJECTIONS),
// NODES and the controller's node status. Nothing here reads the log.

export const machineOverview = async ({ nc, db, view, config }: ReadSession, only?: { node: string }): Promise<Overview & { unknown: string[] }> => {
  const mesh = await readOverviewMesh({ db, view }, config.subjectPrefix);
  // A node is judged from what it alone was told and said: for one node, only its NODES head is read.
  return overviewOfMesh({
    mesh: only ? { ...mesh, nodes: mesh.nodes.filter((node) => node.name === only.node) } : mesh,
    holds: [],
    publisher: new DeclarationPublisher(nc, { nodesStream: config.nodesStream, prefix: config.subjectPrefix }),
    pool: db,
    statusSchema: statusSchemaFromEnv(),
    heartbeatThresholdMs: heartbeatThresholdMs(),
  });
};
