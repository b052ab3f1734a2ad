import type { NatsConnection } from '@nats-io/nats-core';
import { withoutPassword } from '../adapters/database-logins.js';
import type { MeshConfig } from '../config.js';
import { askHealth, healthToolSubject, type HealthAnswer } from '../controller/health-tool.js';
import { unreachableLine } from '../controller/store-watch.js';
import { UnavailableError } from '../errors.js';

// What a read says when PostgreSQL does not answer it: the store, its address and since when —
// the controller has been watching it (store-watch.ts), so its answer dates the outage; a read
// never guesses "is the controller running?" when the controller answered.

/** The refusal for a read that could not reach PostgreSQL at `databaseUrl`. */
export const storeUnreachable = async (nc: NatsConnection, config: Pick<MeshConfig, 'subjectPrefix'>, databaseUrl: string, cause: unknown): Promise<UnavailableError> => {
  const url = withoutPassword(databaseUrl);
  const mine = (cause as Error)?.message || String(cause);
  const at = new Date().toISOString();
  const answer = await askHealth(nc, config.subjectPrefix);
  const store = answer?.postgres;
  const details = { store: 'PostgreSQL', url, since: store?.reachable === false ? store.unreachableSince : null, controllerAnswered: answer !== undefined };
  if (store?.reachable === false) {
    return new UnavailableError(
      `${unreachableLine(store)}, as the controller sees it; this read could not reach it either (${mine}). Nothing is lost meanwhile: the log keeps every change and the projections catch up by themselves when it answers again`,
      details,
      { cause },
    );
  }
  const controller = answer
    ? store
      ? `the controller reaches PostgreSQL at ${store.url} (last looked at ${store.checkedAt ?? 'no time yet'}), so check this command's MESH_DATABASE_URL and the reader's password file`
      : 'the controller answered but runs without PostgreSQL'
    : `the controller did not answer on ${healthToolSubject(config.subjectPrefix)}, so since when is not known, and it may not be running either (\`npx mesh dev up\` starts the stack)`;
  return new UnavailableError(`PostgreSQL at ${url} is unreachable from this command (at ${at}: ${mine}); ${controller}`, details, { cause });
};

/** Why projections that are behind may be so, from the controller's answer (or its silence). */
export const behindHint = (answer: HealthAnswer | undefined, prefix: string): string => {
  if (!answer) return `The controller did not answer on ${healthToolSubject(prefix)}: is it running? It folds the log into these tables: \`npx mesh dev up\` starts it.`;
  if (answer.postgres?.reachable === false) return `The controller is running, and says ${unreachableLine(answer.postgres)}.`;
  return 'The controller is running (it answered); `mesh projections status` says what each projection is doing.';
};
