import type { LogFilters } from '../../../cli/log-filters.js';
import type { BuildState } from '../../../projections/status.js';
import { Layout, Live } from './layout.js';
import { EventsTable, Head, ModuleLink } from './parts.js';
import type { LogView } from './source.js';

// The console's lists: the catalogue, the projections with their checkpoint and lag, the log with
// the filters of `mesh log`, and what a page says when what it was asked for is not there.

export const CataloguePage = ({ modules }: { modules: { name: string; definition_version: number; digest: string; provides: string[] }[] }) => (
  <Layout title="catalogue — the mesh">
    <h1>catalogue</h1>
    <Live url="/catalogue">
      <p class="note muted">{`${modules.length} modules registered; each with its newest definition.`}</p>
      <table id="catalogue">
        <Head columns={['module', 'definition', 'provides', 'digest']} />
        <tbody>
          {modules.map((m) => (
            <tr>
              <td>
                <ModuleLink name={m.name} />
              </td>
              <td>v{m.definition_version}</td>
              <td>{m.provides.join(', ') || '–'}</td>
              <td>
                <code>{m.digest.slice(0, 19)}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </Live>
  </Layout>
);

export const ProjectionsPage = ({ states }: { states: BuildState[] }) => (
  <Layout title="projections — the mesh">
    <h1>projections</h1>
    <Live url="/projections">
      <p class="note muted">Each table the log is folded into, as <code>npx mesh projections status</code> tells it: how far it has folded, and how far behind the log it is.</p>
      <table id="projections-table">
        <Head columns={['projection', 'status', 'version', 'checkpoint', 'log head', 'lag', 'events applied', 'problem']} />
        <tbody>
          {states.map((s) => (
            <tr class={s.problem ? 'bad' : ''}>
              <td>{s.projection}</td>
              <td>{s.notMoving ? 'not moving' : s.status}</td>
              <td>{s.version === undefined ? `(code v${s.codeVersion ?? '?'})` : `v${s.version}`}</td>
              <td class="num">{s.checkpoint}</td>
              <td class="num">{s.headSeq}</td>
              <td>{s.lagCommits === 0 ? 'caught up' : `${s.lagCommits} behind${s.lagSeconds === null ? '' : ` (${s.lagSeconds.toFixed(1)} s)`}`}</td>
              <td class="num">{s.eventsApplied}</td>
              <td>{s.problem ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Live>
  </Layout>
);

/** The query string of a log page asked for with these filters. */
export const logUrl = (filters: LogFilters): string => {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(filters)) {
    if (key === 'type') for (const type of filters.type) query.append('type', type);
    else if (typeof value === 'string' && value !== '') query.set(key, value);
  }
  const text = query.toString();
  return text ? `/log?${text}` : '/log';
};

const Field = ({ name, label, value, hint }: { name: string; label: string; value: string | undefined; hint: string }) => (
  <label>
    {label}
    <input name={name} value={value ?? ''} placeholder={hint} />
  </label>
);

export const LogPage = ({ filters, view, refusal }: { filters: LogFilters; view: LogView | undefined; refusal: string | undefined }) => (
  <Layout title="log — the mesh">
    <h1>log</h1>
    <form id="filters" method="get" action="/log">
      <Field name="since" label="since seq" value={filters.since} hint="120" />
      <Field name="aggregate" label="aggregate" value={filters.aggregate} hint="seat.mesh-git, or seat" />
      <Field name="type" label="types" value={filters.type.join(' ')} hint="node.added assignment.created" />
      <Field name="actor" label="actor" value={filters.actor} hint="operator:ada, or operator:*" />
      <Field name="correlation" label="correlation" value={filters.correlation} hint="a command id" />
      <Field name="after" label="after" value={filters.after} hint="2026-12-02T14:00:00Z" />
      <Field name="before" label="before" value={filters.before} hint="2026-12-02T15:00:00Z" />
      <button type="submit">show</button>
      <a href="/log">clear</a>
    </form>
    <p class="note muted">
      The filters of <code>npx mesh log</code>, read the same way; the audit projection finds the events, the log gives their data.
    </p>
    <Live url={logUrl(filters)}>
      {refusal !== undefined ? (
        <p id="refusal" class="banner">{refusal}</p>
      ) : view ? (
        <>
          <p id="log-summary" class="note muted">
            {`${view.events.length} ${view.events.length === 1 ? 'event' : 'events'} up to log sequence ${view.head}${view.events.length >= view.limit ? ` (the newest ${view.limit}; narrow the filters or set since to see others)` : ''}.`}
          </p>
          <EventsTable id="log" events={view.events} passed={view.passed} empty="No event matches." />
        </>
      ) : null}
    </Live>
  </Layout>
);

export const NotFoundPage = ({ what, why }: { what: string; why: string }) => (
  <Layout title={`${what} — the mesh`}>
    <h1>{what}</h1>
    <p id="not-found" class="banner">{why}</p>
    <p>
      <a href="/">Back to the overview</a>.
    </p>
  </Layout>
);
