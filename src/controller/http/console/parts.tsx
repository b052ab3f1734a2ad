import type { ComponentChildren } from 'preact';
import type { PassedCommit } from '../../../adapters/eventlog/chain-reader.js';
import type { StoredEvent } from '../../../domain/events/envelope.js';
import type { NodeHold } from '../../../domain/facts/state.js';

// The small pieces every console page is made of: links to a node, module or seat page, a time as
// "how long ago", and a table of events as `mesh log` prints them. Text and attributes are escaped
// by the renderer; nothing here writes markup from a string.

const path = (kind: string, name: string): string => `/${kind}/${encodeURIComponent(name)}`;

export const NodeLink = ({ name }: { name: string }) => <a href={path('nodes', name)} class="node">{name}</a>;
export const ModuleLink = ({ name }: { name: string }) => <a href={path('modules', name)} class="module">{name}</a>;
export const SeatLink = ({ name }: { name: string }) => <a href={path('seats', name)} class="seat">{name}</a>;

/** NODE/MODULE, each part linked to its page. */
export const AssignmentLink = ({ node, module }: { node: string; module: string }) => (
  <span class="assignment">
    <NodeLink name={node} />/<ModuleLink name={module} />
  </span>
);

/** Items separated by ", ", or what to say when there are none. */
export const Joined = ({ items, none }: { items: ComponentChildren[]; none: string }) =>
  items.length === 0 ? <span class="muted">{none}</span> : <>{items.flatMap((item, i) => (i === 0 ? [item] : [', ', item]))}</>;

/** How long ago, to the second or minute, from `now`; "never" when there is no time. */
export const ago = (iso: string | null | undefined, now: Date): string => {
  if (!iso) return 'never';
  const seconds = Math.max(0, Math.round((now.getTime() - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  return `${Math.round(seconds / 3600)} h ago`;
};

/** The page an aggregate has in the console, if any: node.alpha, module.greeter, seat.mesh-git, assignment.alpha.greeter. */
export const AggregateLink = ({ aggregate }: { aggregate: string }) => {
  const [kind, ...rest] = aggregate.split('.');
  const name = rest.join('.');
  switch (kind) {
    case 'node':
    case 'fact':
      return <a href={path('nodes', name)}>{aggregate}</a>;
    case 'module':
      return <a href={path('modules', name)}>{aggregate}</a>;
    case 'seat':
      return <a href={path('seats', name)}>{aggregate}</a>;
    case 'assignment':
      return rest.length === 2 ? <span>assignment.<AssignmentLink node={rest[0] ?? ''} module={rest[1] ?? ''} /></span> : <>{aggregate}</>;
    default:
      return <>{aggregate}</>;
  }
};

/** Events in log order as `mesh log` prints them, with each commit an operator voided in its place. */
export const EventsTable = ({ events, passed, id, empty }: { events: readonly StoredEvent[]; passed: readonly PassedCommit[]; id: string; empty: string }) => {
  const rows: { seq: number; row: ComponentChildren }[] = [
    ...events.map((event) => ({
      seq: event.seq + event.index / 1000,
      row: (
        <tr key={`${event.seq}.${event.index}`}>
          <td class="num">{event.index === 0 ? event.seq : `${event.seq}.${event.index}`}</td>
          <td>{event.time.replace(/\.\d+Z$/, 'Z')}</td>
          <td>
            <AggregateLink aggregate={event.aggregate} />@{event.version}
          </td>
          <td>{event.type}</td>
          <td>{event.actor}</td>
          <td>
            <code>{JSON.stringify(event.data)}</code>
          </td>
        </tr>
      ),
    })),
    ...passed.map((commit) => ({
      seq: commit.seq,
      row: (
        <tr key={`void-${commit.seq}`} class="voided">
          <td class="num">{commit.seq}</td>
          <td>VOIDED, passed by</td>
          <td>{commit.aggregate}</td>
          <td>voided at seq {commit.voidSeq}</td>
          <td>{commit.actor}</td>
          <td>
            <code>{JSON.stringify({ reason: commit.reason, problem: commit.problem })}</code>
          </td>
        </tr>
      ),
    })),
  ].sort((a, b) => a.seq - b.seq);
  if (rows.length === 0) return <p class="note muted" id={id}>{empty}</p>;
  return (
    <table id={id} class="events">
      <Head columns={['seq', 'time (UTC)', 'aggregate@version', 'type', 'actor', 'data']} />
      <tbody>{rows.map((r) => r.row)}</tbody>
    </table>
  );
};

/** A table's header row. */
export const Head = ({ columns }: { columns: readonly string[] }) => (
  <thead>
    <tr>
      {columns.map((column) => (
        <th>{column}</th>
      ))}
    </tr>
  </thead>
);

/** What nodes hold back and why, as they said it, and since when (the fact that first stated it). */
export const HeldTable = ({ holds, now, withNode }: { holds: readonly NodeHold[]; now: Date; withNode: boolean }) => (
  <table id="held">
    <Head columns={[...(withNode ? ['node'] : []), 'module', 'resource', 'why, as the node said', 'since']} />
    <tbody>
      {holds.map((h) => (
        <tr>
          {withNode ? (
            <td>
              <NodeLink name={h.node} />
            </td>
          ) : null}
          <td>
            <ModuleLink name={h.module} />
          </td>
          <td>
            {h.resource} <span class="muted">({h.kind})</span>
          </td>
          <td>{h.reason ?? 'no reason given'}</td>
          <td>
            {ago(h.since.time, now)} <span class="muted">(seq {h.since.seq}, {h.since.time})</span>
          </td>
        </tr>
      ))}
    </tbody>
  </table>
);
