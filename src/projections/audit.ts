import type { StoredEvent } from '../domain/events/envelope.js';
import { defineProjection, EVERY_EVENT, migrationSql, type ProjectionTx } from './projection.js';

// The audit index of the log: who did what, when, why (causation) and as part of what
// (correlation), one row per event of every type. Its schema is migrations/audit/v<version>.sql.

const COLUMNS = 'seq, event_index, event_id, type, aggregate, version, actor, command_id, causation_id, correlation_id, time';

const insertMany = async (events: readonly StoredEvent[], tx: ProjectionTx): Promise<void> => {
  // One statement for a whole batch: the rows as one JSON parameter, unpacked server-side
  // (JSON.stringify and PostgreSQL's JSON parser are far cheaper than per-column array literals).
  const rows = events.map((e) => ({
    seq: e.seq,
    event_index: e.index,
    event_id: e.id,
    type: e.type,
    aggregate: e.aggregate,
    version: e.version,
    actor: e.actor,
    command_id: e.commandId,
    causation_id: e.causationId,
    correlation_id: e.correlationId,
    time: e.time,
  }));
  await tx.client.query(`INSERT INTO ${tx.table('audit')} (${COLUMNS}) SELECT ${COLUMNS} FROM json_populate_recordset(NULL::${tx.table('audit')}, $1)`, [JSON.stringify(rows)]);
};

export const auditProjection = defineProjection({
  name: 'audit',
  version: 1,
  schemaSql: migrationSql('audit', 1),
  handlers: { [EVERY_EVENT]: (event, tx) => insertMany([event], tx) },
  applyMany: insertMany,
});
