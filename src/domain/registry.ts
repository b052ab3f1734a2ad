import { assignmentEvents } from './assignments/events.js';
import { buildEvents } from './builds/events.js';
import { catalogueEvents } from './catalogue/events.js';
import { declarationEvents } from './declarations/events.js';
import type { StoredEvent } from './events/envelope.js';
import { registryOf, type EventOf, type EventRegistry } from './events/registry.js';
import { logEvents } from './log/events.js';
import { meshEvents } from './mesh/events.js';
import { nodeEvents } from './nodes/events.js';
import { enrolmentEvents } from './nodes/enrolment.js';
import { factEvents } from './facts/events.js';
import { operatorEvents } from './operators/operators.js';
import { commandWindowEvents } from './operators/command-window.js';
import { projectionEvents } from './projections/events.js';
import { seatEvents } from './seats/events.js';
import { secretEvents } from './secrets/events.js';
import { routeEvents } from './routes/events.js';
import { trustEvents } from './trust/events.js';
import { answerEvents } from './answers/events.js';

const meshEventDefinitions = [
  ...meshEvents,
  ...catalogueEvents,
  ...seatEvents,
  ...nodeEvents,
  ...assignmentEvents,
  ...declarationEvents,
  ...enrolmentEvents,
  ...buildEvents,
  ...factEvents,
  ...operatorEvents,
  ...commandWindowEvents,
  ...projectionEvents,
  ...logEvents,
  ...secretEvents,
  ...routeEvents,
  ...trustEvents,
  ...answerEvents,
];

/** Every event of the mesh at its current version: `type` says which, and `data` is as its schema parses it. */
export type MeshEvent = EventOf<(typeof meshEventDefinitions)[number]>;

/** A mesh event as read back from the log. */
export type StoredMeshEvent = StoredEvent<MeshEvent>;

/** Every event type of the mesh, as the log reads and writes them. */
export const meshEventRegistry = (): EventRegistry<MeshEvent> => registryOf(meshEventDefinitions);
