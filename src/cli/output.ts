import { MeshError, exitCodeFor } from '../errors.js';
import { Refusal } from '../domain/refusal.js';

export interface Output {
  json: boolean;
  line(text: string): void;
  data(value: unknown): void;
}

export const output = (json: boolean): Output => ({
  json,
  line: (text) => {
    if (!json) process.stdout.write(`${text}\n`);
  },
  data: (value) => {
    process.stdout.write(`${JSON.stringify(value)}\n`);
  },
});

/** Progress and notices go to stderr, so stdout stays the answer (and valid JSON with --json). */
export const say = (text: string): void => {
  process.stderr.write(`${text}\n`);
};

export const reportError = (error: unknown, json: boolean): number => {
  const code = exitCodeFor(error);
  if (json) {
    // Every refusal has one shape: { ok: false, refused: [{ what, why, remedy }] }.
    const refused =
      error instanceof Refusal
        ? error.problems
        : [{ what: error instanceof MeshError ? String(error.details.field ?? error.code) : 'internal', why: (error as Error)?.message ?? String(error), remedy: '' }];
    const details = error instanceof Refusal ? {} : error instanceof MeshError ? error.details : {};
    const body = { ok: false, refused, error: { code: error instanceof MeshError ? error.code : 'internal', ...details } };
    process.stdout.write(`${JSON.stringify(body)}\n`);
  } else {
    const message = error instanceof MeshError ? error.message : `internal error: ${(error as Error)?.stack ?? String(error)}`;
    process.stderr.write(`mesh: ${message}\n`);
  }
  return code;
};
