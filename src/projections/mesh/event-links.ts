import { eventLinks, type EventLinks } from '../../domain/bus/event-links.js';
import type { ReadViews } from './read-views.js';

// The catalogue's event links read from the projections — each module's newest definition
// (`modules`) and each seat's protocol (`seats`) — judged by the same function the controller
// applies to its fold. Not a table of its own: a finding is a function of the current catalogue,
// so keeping it would keep a copy (docs/decisions.md, "Subscriptions that match nothing").

/** The projections the event links are read from. */
export const EVENT_LINK_PROJECTIONS = ['modules', 'seats'] as const;

const texts = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

export const readEventLinks = async ({ db, view }: ReadViews, prefix = 'mesh'): Promise<EventLinks> => {
  const [modules, seats] = await Promise.all([
    db.query<{ name: string; emits: unknown; consumes: unknown }>(`SELECT name, manifest->'emits' AS emits, manifest->'consumes' AS consumes FROM ${view('modules')} ORDER BY name`),
    db.query<{ name: string; emits: unknown }>(`SELECT name, protocol->'emits' AS emits FROM ${view('seats')} ORDER BY name`),
  ]);
  return eventLinks({
    modules: modules.rows.map((m) => ({ module: m.name, emits: texts(m.emits), consumes: texts(m.consumes) })),
    seats: seats.rows.map((s) => ({ seat: s.name, emits: texts(s.emits) })),
    prefix,
  });
};
