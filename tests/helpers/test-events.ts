import { z } from 'zod';
import { defineEvent, EventRegistry } from '../../src/domain/events/registry.js';
import { LogVoided } from '../../src/domain/log/events.js';

// Events that exist only for the log's own tests, including one with a three-step history.

export const Counted = defineEvent({
  type: 'test.counted',
  version: 1,
  schema: z.object({ n: z.number().int(), writer: z.string().optional() }).strict(),
});

export const Noted = defineEvent({
  type: 'test.noted',
  version: 1,
  schema: z.object({ text: z.string().min(1) }).strict(),
});

// v1 {name}; v2 split the name {first, last}; v3 added a required `title`, defaulting to "".
export const Renamed = defineEvent({
  type: 'test.renamed',
  version: 3,
  schema: z.object({ first: z.string(), last: z.string(), title: z.string() }).strict(),
  upcasters: {
    1: (data) => {
      const { name } = data as { name: string };
      const [first = '', ...rest] = name.split(' ');
      return { first, last: rest.join(' ') };
    },
    2: (data) => ({ ...(data as object), title: '' }),
  },
});

/** The test events, and the log's own void (so a test log can be voided like the mesh's). */
export const testRegistry = (): EventRegistry => new EventRegistry([Counted, Noted, Renamed, LogVoided]);
