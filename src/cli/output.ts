import { MeshError, exitCodeFor } from '../errors.js';

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
    const body =
      error instanceof MeshError
        ? { error: { code: error.code, message: error.message, ...error.details } }
        : { error: { code: 'internal', message: (error as Error)?.message ?? String(error) } };
    process.stdout.write(`${JSON.stringify(body)}\n`);
  } else {
    const message = error instanceof MeshError ? error.message : `internal error: ${(error as Error)?.stack ?? String(error)}`;
    process.stderr.write(`mesh: ${message}\n`);
  }
  return code;
};
