import { EventRegistry } from './events/registry.js';
import { meshEvents } from './mesh/events.js';

/** Every event type of the mesh, as the log reads and writes them. */
export const meshEventRegistry = (): EventRegistry => new EventRegistry([...meshEvents]);
