import { describeDangling } from '../domain/bus/event-links.js';
import { EVENT_LINK_PROJECTIONS, readEventLinks } from '../projections/mesh/event-links.js';
import { output } from './output.js';
import { atLeastFlag, withReads } from './reads.js';

// `mesh events dangling`: across the whole catalogue, every consumed event no registered module
// emits (a finding, which `mesh status` counts against the mesh) and every emitted event nobody
// consumes (listed, no fault). Read from the projections; a listing, so it exits 0 either way.


export const danglingCommand = (values: { json?: true; atLeast?: string }): Promise<number> => {
  const out = output(values.json ?? false);
  return withReads(EVENT_LINK_PROJECTIONS, { atLeast: atLeastFlag(values.atLeast) }, async (session) => {
    const links = await readEventLinks(session, session.config.subjectPrefix);
    if (out.json) {
      out.data({ dangling: links.dangling, unconsumed: links.unheard });
      return 0;
    }
    out.line(links.dangling.length > 0 ? 'consumed, and matching nothing any registered module emits:' : 'every consumed event is emitted by a registered module');
    for (const d of links.dangling) out.line(`  ${describeDangling(d)}`);
    out.line(links.unheard.length > 0 ? 'emitted, and consumed by no registered module (not a fault):' : 'every emitted event has a consumer');
    for (const u of links.unheard) out.line(`  ${u.emitter} emits ${u.event} (${u.subject})`);
    return 0;
  });
};
