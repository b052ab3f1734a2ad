import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ValidationError } from '../errors.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** node's parseArgs, strict, with its complaints turned into a ValidationError naming the flag. */
export const parseFlags = <T extends Options>(args: string[], options: T, positionals = 0) => {
  try {
    const parsed = parseArgs({ args, options, strict: true, allowPositionals: positionals > 0 });
    if (parsed.positionals.length > positionals) {
      throw new ValidationError(`unexpected argument "${parsed.positionals[positionals]}"`, { field: 'arguments' });
    }
    return parsed;
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    const message = (error as Error).message;
    const flag = /'(-{1,2}[^']+)'/.exec(message)?.[1] ?? 'arguments';
    throw new ValidationError(message, { field: flag });
  }
};

export const wholeNumberFlag = (name: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new ValidationError(`--${name} must be a whole number ≥ 0, not "${value}"`, { field: `--${name}` });
  return n;
};
