import { foldingProjection } from './folding.js';
import type { ReadViews } from './read-views.js';
import { RowImage } from './rows.js';

// `trust_root`, as the trust slice folds trust.root-set: one row, the newest root set.

type TrustRootRow = { id: 'root'; certificate: string; fingerprint: string; subject: string; valid_to: string; set_seq: number | string };

export const trustProjection = foldingProjection<RowImage<TrustRootRow>>({
  name: 'trust',
  version: 1,
  types: ['trust.root-set'],
  open: async (_events, tx) => {
    const roots = new RowImage<TrustRootRow>('trust_root', ['id']);
    await roots.load(tx, []);
    return roots;
  },
  apply: (roots, event) => {
    if (event.type === 'trust.root-set') roots.set({ id: 'root', certificate: event.data.certificate, fingerprint: event.data.fingerprint, subject: event.data.subject, valid_to: event.data.validTo, set_seq: event.seq });
  },
  save: (roots, tx) => roots.save(tx),
});

export interface TrustRootRead {
  fingerprint: string;
  subject: string;
  validTo: string;
  certificate: string;
  /** the log sequence it was set at */
  seq: number;
}

/** The root the mesh's machines are told to trust now, or null while none was set. */
export const readTrustRoot = async ({ db, view }: ReadViews): Promise<TrustRootRead | null> => {
  const row = (await db.query<{ certificate: string; fingerprint: string; subject: string; valid_to: string; set_seq: string }>(`SELECT certificate, fingerprint, subject, valid_to, set_seq FROM ${view('trust_root')}`)).rows[0];
  return row ? { certificate: row.certificate, fingerprint: row.fingerprint, subject: row.subject, validTo: row.valid_to, seq: Number(row.set_seq) } : null;
};
