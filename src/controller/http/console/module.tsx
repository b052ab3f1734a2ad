import { describeAssessment, describeEdge } from '../../../cli/graph-read.js';
import { Layout, Live } from './layout.js';
import { EventsTable, Head, Joined, ModuleLink, NodeLink, SeatLink } from './parts.js';
import type { ModuleView } from './source.js';

// A module's page: its newest definition (and, in its history, every one before), what it
// provides, requires and declares, where it runs, and its place in the graph: standing, versions,
// the edges it is built on and those that stand on it.

const EMPTY = { provides: [], requires: [], seats: [], canHold: [] } as const;

export const ModulePage = ({ view }: { view: ModuleView }) => {
  const manifest = view.definition.ok ? view.definition.manifest : { ...EMPTY, description: undefined };
  const g = view.graph;
  return (
    <Layout title={`module ${view.name} — the mesh`}>
      <h1>
        module <span id="name">{view.name}</span>
      </h1>
      <Live url={`/modules/${encodeURIComponent(view.name)}`}>
        <p id="description" class="note">{manifest.description ?? ''}</p>
        {view.definition.ok ? null : <p class="banner">{`Its definition does not read as a manifest: ${view.definition.problem}`}</p>}
        <p id="definition" class="note">
          {`definition v${view.definitionVersion}, `}
          <code>{view.digest}</code>
        </p>
        <h2>Runs on</h2>
        <p id="runs-on" class="note">
          <Joined items={view.runsOn.map((n) => <NodeLink name={n} />)} none="no node: it is not assigned" />
        </p>
        <h2>Definition</h2>
        <table id="contract">
          <tbody>
            <tr>
              <th>provides</th>
              <td>{manifest.provides.map((p) => p.provision).join(', ') || '–'}</td>
            </tr>
            <tr>
              <th>requires</th>
              <td>
                {manifest.requires.map((r, i) => (
                  <>
                    {i > 0 ? ', ' : ''}
                    {`${r.name} (${r.contract} from ${r.provider}`}
                    {r.seat ? (
                      <>
                        {', seat '}
                        <SeatLink name={r.seat} />
                      </>
                    ) : null}
                    )
                  </>
                ))}
                {manifest.requires.length === 0 ? '–' : null}
              </td>
            </tr>
            <tr>
              <th>declares seats</th>
              <td>
                <Joined items={manifest.seats.map((s) => <><SeatLink name={s.name} /> ({s.scope})</>)} none="none" />
              </td>
            </tr>
            <tr>
              <th>can hold</th>
              <td>
                <Joined items={manifest.canHold.map((claim) => <SeatLink name={typeof claim === 'string' ? claim : claim.seat} />)} none="none" />
              </td>
            </tr>
          </tbody>
        </table>
        <h2>Definitions</h2>
        <table id="definitions">
          <Head columns={['definition', 'registered at seq', 'time (UTC)', 'by', 'digest']} />
          <tbody>
            {view.history.events.flatMap((event) =>
              event.type === 'module.registered'
                ? [
                    <tr>
                      <td>v{event.data.definitionVersion}</td>
                      <td class="num">{event.seq}</td>
                      <td>{event.time}</td>
                      <td>{event.actor}</td>
                      <td>
                        <code>{event.data.digest}</code>
                      </td>
                    </tr>,
                  ]
                : [],
            )}
          </tbody>
        </table>
        <h2>In the graph</h2>
        <p id="standing" class="note">{`${describeAssessment(g.assessment)}; rollout: ${g.policy}; nodes declared to run ${g.deployed ?? 'no artifact of it'}`}</p>
        {g.versions.length === 0 ? (
          <p id="versions" class="note muted">No version built by the mesh.</p>
        ) : (
          <table id="versions">
            <Head columns={['version', 'from commit', 'build']} />
            <tbody>
              {g.versions.map((v) => (
                <tr>
                  <td>
                    <code>{v.digest}</code>
                  </td>
                  <td>{v.commit.slice(0, 12)}</td>
                  <td>{v.buildId}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <ul id="edges">
          {g.builtOn.map((e) => (
            <li>
              built on {describeEdge(e)} <Joined items={e.producers.map((p) => <ModuleLink name={p} />)} none="" />
            </li>
          ))}
          {g.standingOn.map((e) => (
            <li>
              <ModuleLink name={e.source} /> stands on it
            </li>
          ))}
        </ul>
        {g.builtOn.length + g.standingOn.length === 0 ? <p class="note muted">No edge: it is built on nothing the mesh builds, and nothing stands on it.</p> : null}
        <h2>Builds</h2>
        <ul id="builds">
          {g.builds.slice(0, 10).map((b) => (
            <li>{`${b.buildId} ${b.status} at ${b.commit.slice(0, 12)}${b.status === 'failed' ? `: ${b.reason}` : ''}`}</li>
          ))}
        </ul>
        {g.builds.length === 0 ? <p class="note muted">No build of it.</p> : null}
        <h2>History</h2>
        <p class="note muted">Every definition registered and every assignment of it, as <code>npx mesh history module.{view.name}</code> prints it.</p>
        <EventsTable id="history" events={view.history.events} passed={view.history.passed} empty="Nothing has happened to it." />
        <h2>Newest definition, in full</h2>
        <pre id="manifest">{JSON.stringify(view.manifest, null, 2)}</pre>
      </Live>
    </Layout>
  );
};
