import { ValidationError } from '../../errors.js';

// How many copies of each of the control plane's streams the bus keeps, from how many servers it
// has: three on a cluster of three or more (a majority of three survives one server lost), one on
// a single server. Two would survive nothing (a majority of two is both), so it is never chosen.

export const streamReplicas = (clusterSize: number): number => (clusterSize >= 3 ? 3 : 1);

/** MESH_NATS_CLUSTER_SIZE, else what the local stack recorded, else 1: a whole number from 1 to 9. */
export const clusterSizeFrom = (raw: string | number | undefined): number => {
  if (raw === undefined || raw === '') return 1;
  const size = Number(raw);
  if (!Number.isInteger(size) || size < 1 || size > 9) {
    throw new ValidationError(`MESH_NATS_CLUSTER_SIZE "${raw}" is not a number of nats-servers from 1 to 9`, { field: 'MESH_NATS_CLUSTER_SIZE', value: raw });
  }
  return size;
};
