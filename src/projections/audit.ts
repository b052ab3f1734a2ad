import type { StoredEvent } from '../domain/events/envelope.js';
import { defineProjection, EVERY_EVENT, migrationSql, type ProjectionTx } from './projection.js';

// The audit index of the log: who did what, when, why (causation) and as part of what
// (correlation), one row per event of every type. Its schema is migrations/audit/v<version>.sql.

const COLUMNS = 'seq, event_index, event_id, type, aggregate, version, actor, command_id, causation_id, correlation_id, time';

const insertMany = async (events: readonly StoredEvent[], tx: ProjectionTx): Promise<void> => {
  // One statement for a whole batch: arrays per column, unnested server-side.
  await tx.client.query(
    `INSERT INTO ${tx.table('audit')} (${COLUMNS})
     SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[], $10::text[], $11::timestamptz[])`,
    [
      events.map((e) => e.seq),
      events.map((e) => e.index),
      events.map((e) => e.id),
      events.map((e) => e.type),
      events.map((e) => e.aggregate),
      events.map((e) => e.version),
      events.map((e) => e.actor),
      events.map((e) => e.commandId),
      events.map((e) => e.causationId),
      events.map((e) => e.correlationId),
      events.map((e) => e.time),
    ],
  );
};

export const auditProjection = defineProjection({
  name: 'audit',
  version: 1,
  schemaSql: migrationSql('audit', 1),
  handlers: { [EVERY_EVENT]: (event, tx) => insertMany([event], tx) },
  applyMany: insertMany,
});
