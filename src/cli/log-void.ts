import { parseSequence } from '../domain/limits.js';
import { ValidationError } from '../errors.js';
import { runCommand } from './mesh-session.js';
import { output } from './output.js';

// `mesh log void SEQ --reason "…"`: an operator, having looked at the commit every reader is held
// at, lets them pass it. Signed like every command and decided by the controller, which refuses a
// sequence the log does not hold and a commit that reads and verifies (exit 3).

export const voidCommand = async (raw: string, values: { json?: true; reason: string; commandId?: string; plan?: true }): Promise<number> => {
  const usage = 'usage: mesh log void SEQ --reason "why the commit is passed by"';
  const parsed = parseSequence(raw);
  if ('why' in parsed) throw new ValidationError(`${usage}: SEQ is the log sequence readers are held at (\`mesh status\` names it); ${parsed.why}`, { field: 'seq', value: raw });
  const reason = values.reason.trim();
  if (!reason) throw new ValidationError(`${usage}: a void says why (--reason)`, { field: '--reason' });
  return runCommand(output(values.json ?? false), { type: 'void-commit', seq: parsed.seq, reason }, values.commandId, { plan: values.plan });
};
