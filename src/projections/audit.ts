import type { StoredEvent } from '../domain/events/envelope.js';
import { copyFromStdin, copyText } from './copy.js';
import { defineProjection, EVERY_EVENT, migrationSql, type ProjectionTx } from './projection.js';

// The audit index of the log: who did what, when, why (causation) and as part of what
// (correlation), one row per event of every type. Its schema is migrations/audit/v<version>.sql.

const COLUMNS = 'seq, event_index, event_id, type, aggregate, version, actor, command_id, causation_id, correlation_id, time';

/** Lines of COPY text per chunk sent: big enough to amortise the calls, small enough to stream. */
const LINES_PER_CHUNK = 2_000;

const lineOf = (e: StoredEvent): string =>
  `${e.seq}\t${e.index}\t${copyText(e.id)}\t${copyText(e.type)}\t${copyText(e.aggregate)}\t${e.version}\t${copyText(e.actor)}\t${copyText(e.commandId)}\t${copyText(e.causationId)}\t${copyText(e.correlationId)}\t${copyText(e.time)}\n`;

// A batch goes in with COPY, PostgreSQL's bulk-load path: a rebuild writes every event of the
// log here, and nothing else costs as little per row.
const copyMany = async (events: readonly StoredEvent[], tx: ProjectionTx): Promise<void> => {
  const chunks: Buffer[] = [];
  for (let start = 0; start < events.length; start += LINES_PER_CHUNK) {
    let text = '';
    for (const event of events.slice(start, start + LINES_PER_CHUNK)) text += lineOf(event);
    chunks.push(Buffer.from(text));
  }
  await copyFromStdin(tx.client, `${tx.table('audit')} (${COLUMNS})`, chunks);
};

const insertOne = async (e: StoredEvent, tx: ProjectionTx): Promise<void> => {
  await tx.client.query(`INSERT INTO ${tx.table('audit')} (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, [
    e.seq,
    e.index,
    e.id,
    e.type,
    e.aggregate,
    e.version,
    e.actor,
    e.commandId,
    e.causationId,
    e.correlationId,
    e.time,
  ]);
};

export const auditProjection = defineProjection({
  name: 'audit',
  version: 1,
  schemaSql: migrationSql('audit', 1),
  handlers: { [EVERY_EVENT]: insertOne },
  applyMany: copyMany,
});
