import type { Declaration } from '../../../domain/declarations/declaration.js';
import { Layout, Live } from './layout.js';
import { ago, EventsTable, Head, HeldTable, Joined, ModuleLink, SeatLink } from './parts.js';
import type { NodeView } from './source.js';

// A node's page: what it is told to run and what it runs, the seats it holds, what it holds back
// and why (as the node said), its declaration as NODES holds it, its last facts and its history.

const DeclarationTable = ({ declaration }: { declaration: Declaration | null }) =>
  declaration === null ? (
    <p id="declaration" class="note muted">No declaration has been sent to it yet.</p>
  ) : (
    <div id="declaration">
      <p class="note">
        {`#${declaration.sequence}, derived at log sequence ${declaration.derivedFromSeq}; `}
        <code>{declaration.digest}</code>
      </p>
      {declaration.assignments.length === 0 ? (
        <p class="note muted">Empty: it is told to run nothing.</p>
      ) : (
        <table>
          <Head columns={['module', 'definition', 'artifact', 'seats', 'resources, in the order they are applied']} />
          <tbody>
            {declaration.assignments.map((a) => (
              <tr>
                <td>
                  <ModuleLink name={a.module} />
                </td>
                <td>v{a.definitionVersion}</td>
                <td>{a.artifact ? <code>{a.artifact.slice(0, 19)}</code> : <span class="muted">upstream</span>}</td>
                <td>
                  <Joined items={a.seats.map((s) => <SeatLink name={s} />)} none="none" />
                </td>
                <td>{a.resources.map((r) => `${r.kind} ${r.key}`).join(', ') || '–'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );

export const NodePage = ({ view, now }: { view: NodeView; now: Date }) => {
  const machine = view.machine;
  return (
    <Layout title={`node ${view.name} — the mesh`}>
      <h1>
        node <span id="name">{view.name}</span>
      </h1>
      <Live url={`/nodes/${encodeURIComponent(view.name)}`}>
        {view.removed ? (
          <p id="summary" class="banner">{`Removed at log sequence ${view.removed.seq}${view.removed.time ? ` (${view.removed.time})` : ''}: its bus identity and enrolment tokens were retired with it.`}</p>
        ) : (
          <p id="summary" class="note">
            {`root ${view.root}${view.address ? `, reached at ${view.address}` : ''}, `}
            {view.enrolled ? `enrolled${view.enrolledAt ? ` at ${view.enrolledAt}` : ''}` : 'not enrolled (no agent has joined as it)'}
          </p>
        )}
        {view.cordoned ? (
          <p id="cordoned" class="banner">
            Cordoned: it takes no new assignment; what it runs keeps running (<code>npx mesh node uncordon {view.name}</code>).
          </p>
        ) : null}
        <p id="heard" class="note">
          {`last heard: ${machine?.statusUnknown ? `not known (${machine.statusUnknown})` : ago(machine?.lastHeard, now)}; declaration ${machine?.appliedSequence ?? '–'} applied of ${machine?.declaredSequence ?? '–'}`}
        </p>
        <h2>Runs</h2>
        <table id="runs">
          <Head columns={['module', 'told to run', 'running now']} />
          <tbody>
            {view.assignments.map((a) => {
              const running = machine?.running.find((r) => r.module === a.module);
              return (
                <tr>
                  <td>
                    <ModuleLink name={a.module} />
                  </td>
                  <td>definition v{a.definition_version}</td>
                  <td>{running ? `definition v${running.definitionVersion}` : <span class="muted">not reported running</span>}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
        {view.assignments.length === 0 ? <p class="note muted">Nothing is assigned to it.</p> : null}
        <h2>Seats it holds</h2>
        <p id="seats" class="note">
          <Joined
            items={view.seats.map((h) => (
              <>
                <SeatLink name={h.seat} /> (by <ModuleLink name={h.module} />)
              </>
            ))}
            none="none"
          />
        </p>
        <h2>Held back, and why</h2>
        {view.held.length === 0 ? (
          <p id="held" class="note muted">Nothing is held back.</p>
        ) : (
          <HeldTable holds={view.held} now={now} withNode={false} />
        )}
        {(machine?.problems.length ?? 0) > 0 ? (
          <>
            <h2>Not as told</h2>
            <ul id="problems">
              {machine?.problems.map((p) => (
                <li>{p}</li>
              ))}
            </ul>
          </>
        ) : null}
        <h2>Its declaration</h2>
        <DeclarationTable declaration={view.declaration} />
        <h2>Last facts</h2>
        {view.facts.length === 0 ? (
          <p id="facts" class="note muted">No fact stated about it yet.</p>
        ) : (
          <ul id="facts">
            {view.facts.map((f) => (
              <li>
                <span class="muted">{`seq ${f.seq}, ${new Date(f.time).toISOString()}`}</span> {f.type}
                {f.module ? (
                  <>
                    {' '}
                    <ModuleLink name={f.module} />
                  </>
                ) : null}
              </li>
            ))}
          </ul>
        )}
        <h2>History</h2>
        <p class="note muted">Everything that changed what it holds or runs, as <code>npx mesh history node.{view.name}</code> prints it.</p>
        <EventsTable id="history" events={view.history.events} passed={view.history.passed} empty="Nothing has happened to it." />
      </Live>
    </Layout>
  );
};
