import { foldingProjection } from './folding.js';
import type { ReadViews } from './read-views.js';
import { RowImage } from './rows.js';

// `operators`, as evolveMesh folds operator.added (stated afresh, not revoked) and
// operator.revoked (kept, marked revoked, when it exists); `operator_settings`, the settings they
// make for the mesh (operators.command-window-set: `command-window`, in seconds).

type OperatorRow = { name: string; public_key: string; revoked: boolean; changed_seq: number | string };
type SettingRow = { name: string; value: string; changed_seq: number | string };

export const COMMAND_WINDOW_SETTING = 'command-window';

export const operatorsProjection = foldingProjection<{ operators: RowImage<OperatorRow>; settings: RowImage<SettingRow> }>({
  name: 'operators',
  version: 2,
  types: ['operator.added', 'operator.revoked', 'operators.command-window-set'],
  open: async (events, tx) => {
    const operators = new RowImage<OperatorRow>('operators', ['name']);
    await operators.load(tx, events.flatMap((e) => (e.type === 'operator.revoked' ? [{ name: e.data.operator }] : [])));
    return { operators, settings: new RowImage<SettingRow>('operator_settings', ['name']) };
  },
  apply: ({ operators, settings }, event) => {
    if (event.type === 'operator.added') operators.set({ name: event.data.operator, public_key: event.data.publicKey, revoked: false, changed_seq: event.seq });
    else if (event.type === 'operator.revoked') {
      const operator = operators.get({ name: event.data.operator });
      if (operator) operators.set({ ...operator, revoked: true, changed_seq: event.seq });
    } else if (event.type === 'operators.command-window-set') settings.set({ name: COMMAND_WINDOW_SETTING, value: String(event.data.seconds), changed_seq: event.seq });
  },
  save: async ({ operators, settings }, tx) => {
    await operators.save(tx);
    await settings.save(tx);
  },
});

/** Every operator as evolveMesh keeps them: name, the key their commands are signed with, whether revoked. */
export const readOperators = async ({ db, view }: ReadViews): Promise<{ operator: string; publicKey: string; revoked: boolean }[]> =>
  (await db.query<{ name: string; public_key: string; revoked: boolean }>(`SELECT name, public_key, revoked FROM ${view('operators')}`)).rows.map((r) => ({
    operator: r.name,
    publicKey: r.public_key,
    revoked: r.revoked,
  }));
