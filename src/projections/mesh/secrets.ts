import { foldingProjection } from './folding.js';
import type { ReadViews } from './read-views.js';
import { RowImage } from './rows.js';

// `secrets`, as the secrets slice folds secret.made (a version, stated afresh) and secret.shared
// (the same version, other recipients).

type SecretRow = { name: string; purpose: string; version: number; recipients: string[]; changed_seq: number | string };

export const secretsProjection = foldingProjection<RowImage<SecretRow>>({
  name: 'secrets',
  version: 1,
  types: ['secret.made', 'secret.shared'],
  open: async (events, tx) => {
    const secrets = new RowImage<SecretRow>('secrets', ['name']);
    await secrets.load(tx, events.flatMap((e) => (e.type === 'secret.shared' ? [{ name: e.data.secret }] : [])));
    return secrets;
  },
  apply: (secrets, event) => {
    if (event.type === 'secret.made') secrets.set({ name: event.data.secret, purpose: event.data.purpose, version: event.data.version, recipients: event.data.recipients, changed_seq: event.seq });
    else if (event.type === 'secret.shared') {
      const secret = secrets.get({ name: event.data.secret });
      if (secret && secret.version === event.data.version) secrets.set({ ...secret, recipients: event.data.recipients, changed_seq: event.seq });
    }
  },
  save: (secrets, tx) => secrets.save(tx),
});

export interface SecretRead {
  secret: string;
  purpose: string;
  version: number;
  recipients: string[];
  /** the log sequence of its last change */
  seq: number;
}

/** Every secret the log names, by name: what it is for, its version, the nodes it goes to. */
export const readSecrets = async ({ db, view }: ReadViews): Promise<SecretRead[]> =>
  (await db.query<{ name: string; purpose: string; version: number; recipients: string[]; changed_seq: string }>(`SELECT name, purpose, version, recipients, changed_seq FROM ${view('secrets')} ORDER BY name`)).rows.map((r) => ({
    secret: r.name,
    purpose: r.purpose,
    version: r.version,
    recipients: r.recipients,
    seq: Number(r.changed_seq),
  }));
