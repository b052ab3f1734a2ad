import { auditProjection } from './audit.js';
import type { ProjectionDefinition } from './projection.js';

/** Every projection the control plane maintains. The mesh tables join this list as their events land. */
export const meshProjections = (): ProjectionDefinition[] => [auditProjection];
