import { foldingProjection } from './folding.js';
import type { ReadViews } from './read-views.js';
import { RowImage } from './rows.js';

// `operators`, as evolveMesh folds operator.added (stated afresh, not revoked) and
// operator.revoked (kept, marked revoked, when it exists).

type OperatorRow = { name: string; public_key: string; revoked: boolean; changed_seq: number | string };

export const operatorsProjection = foldingProjection<RowImage<OperatorRow>>({
  name: 'operators',
  version: 1,
  types: ['operator.added', 'operator.revoked'],
  open: async (events, tx) => {
    const operators = new RowImage<OperatorRow>('operators', ['name']);
    await operators.load(tx, events.flatMap((e) => (e.type === 'operator.revoked' ? [{ name: e.data.operator }] : [])));
    return operators;
  },
  apply: (operators, event) => {
    if (event.type === 'operator.added') operators.set({ name: event.data.operator, public_key: event.data.publicKey, revoked: false, changed_seq: event.seq });
    else if (event.type === 'operator.revoked') {
      const operator = operators.get({ name: event.data.operator });
      if (operator) operators.set({ ...operator, revoked: true, changed_seq: event.seq });
    }
  },
  save: (operators, tx) => operators.save(tx),
});

/** Every operator as evolveMesh keeps them: name, the key their commands are signed with, whether revoked. */
export const readOperators = async ({ db, view }: ReadViews): Promise<{ operator: string; publicKey: string; revoked: boolean }[]> =>
  (await db.query<{ name: string; public_key: string; revoked: boolean }>(`SELECT name, public_key, revoked FROM ${view('operators')}`)).rows.map((r) => ({
    operator: r.name,
    publicKey: r.public_key,
    revoked: r.revoked,
  }));
