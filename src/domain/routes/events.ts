import { z } from 'zod';
import { defineEvent } from '../events/registry.js';
import { assignmentRef } from '../seats/events.js';

// ADR 0007: a route is a grant. The module asks for a name; the holder of mesh-proxy hands back the
// public name, recorded on the assignment's aggregate when it is assigned, and again on the node's
// when the node's public domain changes. A redirect's `from` name is granted the same way: it is a
// public name too, and unique like one.
export const PublicNameGranted = defineEvent({
  type: 'route.public-name-granted',
  version: 1,
  schema: z.strictObject({
    node: z.string().min(1),
    module: z.string().min(1),
    /** the route of the module's manifest the name belongs to */
    route: z.string().min(1),
    /** the name asked for: the route's own, or a redirect's `from` */
    name: z.string().min(1),
    publicName: z.string().min(1),
    /** the holder of mesh-proxy that handed it back */
    proxy: assignmentRef,
  }),
});

export const routeEvents = [PublicNameGranted] as const;
