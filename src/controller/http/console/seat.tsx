import { Layout, Live } from './layout.js';
import { AssignmentLink, EventsTable, ModuleLink } from './parts.js';
import type { SeatView } from './source.js';

// A seat's page: its names, scope, what it delivers, who declared it, who holds it (per node for
// a node seat) and every holding and handover of it.

export const SeatPage = ({ view }: { view: SeatView }) => (
  <Layout title={`seat ${view.name} — the mesh`}>
    <h1>
      seat <span id="name">{view.name}</span>
    </h1>
    <Live url={`/seats/${encodeURIComponent(view.name)}`}>
      <p id="summary" class="note">
        {`${view.scope} scope; delivers ${view.delivers ?? 'nothing'}; declared by `}
        {view.declaredBy === 'the mesh' ? 'the mesh' : <ModuleLink name={view.declaredBy} />}
        {view.aliases.length > 0 ? `; formerly ${view.aliases.join(', ')}` : ''}
      </p>
      <h2>Held by</h2>
      {view.holders.length === 0 ? (
        <p id="holder" class="note muted">Unheld: nothing was told to hold it.</p>
      ) : (
        <ul id="holder">
          {view.holders.map((h) => (
            <li>
              <AssignmentLink node={h.node} module={h.module} />
              {view.scope === 'node' ? ` (on ${h.scopeKey})` : ''}
            </li>
          ))}
        </ul>
      )}
      <h2>Holdings and handovers</h2>
      <p class="note muted">
        As <code>npx mesh history seat.{view.name}</code> prints them.
      </p>
      <EventsTable id="history" events={view.history.events} passed={view.history.passed} empty="Nothing has happened to it." />
    </Live>
  </Layout>
);
