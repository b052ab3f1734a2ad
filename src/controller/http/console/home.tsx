import type { StoredMeshEvent } from '../../../domain/registry.js';
import type { NodeOverview } from '../../overview.js';
import { Layout, Live } from './layout.js';
import { ago, AssignmentLink, Head, HeldTable, Joined, ModuleLink, NodeLink, SeatLink } from './parts.js';
import type { HomeView } from './source.js';

// The console's first page: the verdict, where the projections are, every node with what it runs
// and holds, what is held back and why, the seats, what is not known, and facts as they are stated.

/** A fact in words: what changed on which node. */
export const describeFact = (fact: StoredMeshEvent): string => {
  switch (fact.type) {
    case 'fact.applied': {
      const d = fact.data;
      return `${d.node}/${d.module} now runs definition ${d.version.definitionVersion}${d.previous ? ` (was ${d.previous.definitionVersion})` : ''}`;
    }
    case 'fact.refused':
      return `${fact.data.node}/${fact.data.module}: ${fact.data.resource} refused: ${fact.data.reason}`;
    case 'fact.crash-looping':
      return `${fact.data.node}/${fact.data.module}: ${fact.data.resource} crash-looping (${fact.data.restarts} restarts)`;
    case 'fact.stopped':
      return `${fact.data.node}/${fact.data.module} stopped`;
    case 'fact.held': {
      const { node, module, resources } = fact.data;
      if (resources.length === 0) return `${node}/${module}: nothing held any more`;
      return `${node}/${module}: ${resources.length} held (${[...new Set(resources.map((r) => r.reason ?? 'no reason given'))].join('; ')})`;
    }
    default:
      return 'node' in fact.data ? `${fact.type} ${fact.data.node}` : fact.type;
  }
};

/** Which declaration a node runs, in words: the newest it was sent, or how far behind it is. */
const applied = (n: NodeOverview) => {
  if (n.declaredSequence === null) return <span class="muted">none sent yet</span>;
  if (n.appliedSequence === n.declaredSequence) return <>the newest (#{n.declaredSequence})</>;
  return <>{n.appliedSequence === null ? 'none yet' : `#${n.appliedSequence}`}; newest is #{n.declaredSequence}</>;
};

const Verdict = ({ view }: { view: HomeView }) => {
  const o = view.overview;
  const running = o.nodes.reduce((sum, n) => sum + n.running.length, 0);
  return o.healthy ? (
    <div id="verdict" class="healthy">
      The mesh is doing what it was told.<span class="detail">{`${o.nodes.length} nodes heard from, ${running} modules running as declared.`}</span>
    </div>
  ) : (
    <div id="verdict" class="unhealthy">
      The mesh is not doing everything it was told ({o.problems.length} {o.problems.length === 1 ? 'problem' : 'problems'}):
      <ul>
        {o.problems.map((p) => (
          <li>{p}</li>
        ))}
      </ul>
    </div>
  );
};

const ProjectionsLine = ({ view }: { view: HomeView }) => {
  const behind = view.projections.filter((p) => p.stall || p.status !== 'serving' || p.lagCommits > 0);
  return (
    <p id="projections" class="note muted">
      <a href="/projections">Projections</a>
      {behind.length === 0
        ? `: all ${view.projections.length} caught up with the log.`
        : `: ${behind.map((p) => `${p.projection}${p.stall ? ` stalled at sequence ${p.stall.seq}` : p.status !== 'serving' ? ' not built yet' : ` ${p.lagCommits} behind`}`).join(', ')}.`}
    </p>
  );
};

const Nodes = ({ view, now }: { view: HomeView; now: Date }) => (
  <table id="nodes">
    <Head columns={['node', 'last heard from', 'declaration applied', 'told to run', 'running', 'seats it holds', 'problems']} />
    <tbody>
      {view.overview.nodes.map((n) => {
        const listed = view.nodes.find((l) => l.name === n.node);
        return (
          <tr>
            <td>
              <b>
                <NodeLink name={n.node} />
              </b>
              {listed?.cordoned ? <span class="tag">cordoned</span> : null}
              <br />
              <span class="muted">{n.address ?? ''}</span>
            </td>
            <td>{n.statusUnknown ? 'not known' : ago(n.lastHeard, now)}</td>
            <td>{applied(n)}</td>
            <td>
              <Joined items={(listed?.modules ?? n.assigned).map((m) => <ModuleLink name={m} />)} none="nothing" />
            </td>
            <td>
              <Joined items={n.running.map((r) => <ModuleLink name={r.module} />)} none="nothing" />
            </td>
            <td>
              <Joined items={n.seats.map((s) => <SeatLink name={s} />)} none="none" />
            </td>
            <td>{n.problems.length === 0 ? <span class="muted">none</span> : n.problems.map((p, i) => <>{i > 0 ? <br /> : null}{p}</>)}</td>
          </tr>
        );
      })}
    </tbody>
  </table>
);

const Held = ({ view, now }: { view: HomeView; now: Date }) => {
  const holds = view.overview.nodes.flatMap((n) => n.held);
  return (
    <>
      <p id="held-summary" class="note muted">
        {holds.length === 0 ? 'Nothing is held.' : `${holds.length} resources held: assigned, and waiting for what is named.`}
      </p>
      <HeldTable holds={holds} now={now} withNode />
    </>
  );
};

const Seats = ({ view }: { view: HomeView }) => {
  const seats = view.overview.seats;
  const held = seats.filter((s) => s.holders.length > 0).length;
  return (
    <>
      <p id="seat-summary" class="note muted">{`${held} of ${seats.length} seats held. An unheld seat is an answer, not a fault: nothing was told to hold it.`}</p>
      <table id="seats">
        <Head columns={['seat', 'scope', 'delivers', 'held by']} />
        <tbody>
          {seats.map((s) => (
            <tr>
              <td>
                <SeatLink name={s.seat} />
              </td>
              <td>{s.scope}</td>
              <td>{s.delivers ?? '–'}</td>
              <td>
                <Joined
                  items={s.holders.map((holder) => {
                    const [node, module] = holder.split('/');
                    return module === undefined ? <>{holder}</> : <AssignmentLink node={node ?? ''} module={module} />;
                  })}
                  none="unheld"
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
};

export const HomePage = ({ view, now }: { view: HomeView; now: Date }) => (
  <Layout title="the mesh">
    <h1>the mesh</h1>
    <Live url="/">
      <Verdict view={view} />
      <p id="checked" class="note muted">{`checked ${now.toISOString().slice(11, 19)} UTC; the page asks again every 2 seconds.`}</p>
      <ProjectionsLine view={view} />
      <h2>Nodes</h2>
      <Nodes view={view} now={now} />
      <h2>Not known</h2>
      {view.notKnown.length === 0 ? (
        <p id="not-known" class="note muted">Nothing: every node has reported, every projection serves.</p>
      ) : (
        <ul id="not-known">
          {view.notKnown.map((line) => (
            <li>{line}</li>
          ))}
        </ul>
      )}
      <h2>Held</h2>
      <Held view={view} now={now} />
      <h2>Seats</h2>
      <Seats view={view} />
      <h2>Facts, as they are stated</h2>
      <p id="live-note" class="note muted">live: a new fact shows here as it is stated (the page asks every 2 seconds).</p>
      <ul id="facts">
        {view.facts.length === 0 ? (
          <li id="no-facts" class="muted">none stated yet</li>
        ) : (
          [...view.facts].reverse().map((fact) => (
            <li>
              <span class="muted">{fact.time.slice(11, 19)}</span> {describeFact(fact)}
            </li>
          ))
        )}
      </ul>
    </Live>
  </Layout>
);
