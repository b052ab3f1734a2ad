import { parseDuration, parseSequence } from '../domain/limits.js';
import { ValidationError } from '../errors.js';

/** A whole number in [min, max]; `why` says where the bounds come from. */
export const wholeNumberFlag = (name: string, value: string | undefined, range: { min: number; max: number; why: string } = { min: 0, max: Number.MAX_SAFE_INTEGER, why: 'the largest whole number this process holds exactly' }): number | undefined => {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < range.min || n > range.max) {
    throw new ValidationError(`--${name} must be a whole number from ${range.min} to ${range.max} (${range.why}), not "${value}"`, { field: `--${name}`, value, ...range });
  }
  return n;
};

/** A log sequence: a whole number from 1 to 2^53 − 1. */
export const sequenceFlag = (flag: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const parsed = parseSequence(value);
  if ('why' in parsed) throw new ValidationError(`${flag} ${parsed.why}; give a sequence from 1 (\`mesh log\` shows them)`, { field: flag, value });
  return parsed.seq;
};

/** A duration flag, positive and at most `max`. */
export const durationFlag = (flag: string, value: string, max: Parameters<typeof parseDuration>[1]): number => {
  const parsed = parseDuration(value, max);
  if ('why' in parsed) throw new ValidationError(`${flag} ${parsed.why}; give one from 1s to ${max.written}`, { field: flag, value });
  return parsed.ms;
};
