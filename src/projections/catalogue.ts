import { auditProjection } from './audit.js';
import { assignmentsProjection } from './mesh/assignments.js';
import { buildsProjection } from './mesh/builds.js';
import { declarationsProjection } from './mesh/declarations.js';
import { factsProjection } from './mesh/facts.js';
import { holdsProjection } from './mesh/holds.js';
import { modulesProjection } from './mesh/modules.js';
import { nodesProjection } from './mesh/nodes.js';
import { operatorsProjection } from './mesh/operators.js';
import { secretsProjection } from './mesh/secrets.js';
import { routesProjection } from './mesh/routes.js';
import { seatsProjection } from './mesh/seats.js';
import type { ProjectionDefinition } from './projection.js';
import type { MeshEvent } from '../domain/registry.js';

/** Every projection the control plane maintains. */
export const meshProjections = (): ProjectionDefinition<MeshEvent>[] => [auditProjection, nodesProjection, modulesProjection, seatsProjection, assignmentsProjection, buildsProjection, factsProjection, holdsProjection, operatorsProjection, declarationsProjection, routesProjection, secretsProjection];
