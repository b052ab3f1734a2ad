// The closed set of errors the mesh raises on purpose. Each has a stable `code`; callers test
// the code, not the class, and the CLI maps codes to exit codes once, at the edge.

export type MeshErrorCode =
  | 'validation'
  | 'concurrency'
  | 'refused'
  | 'not_found'
  | 'unavailable'
  | 'corrupt_event'
  | 'unknown_event';

export class MeshError extends Error {
  readonly code: MeshErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: MeshErrorCode, message: string, details: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MeshError';
    this.code = code;
    this.details = details;
  }
}

/** Input that does not have the shape the mesh needs; `field` names where. */
export class ValidationError extends MeshError {
  constructor(message: string, details: { field: string } & Record<string, unknown>, options?: { cause?: unknown }) {
    super('validation', message, details, options);
    this.name = 'ValidationError';
  }
}

/**
 * An append decided against a state that has since moved: the aggregate's version is not the one
 * expected, or (for commands checked against the whole mesh) the log grew past the sequence the
 * decision read.
 */
export class ConcurrencyError extends MeshError {
  readonly aggregate: string;
  readonly expected: number;
  readonly actual: number;

  constructor(aggregate: string, expected: number, actual: number, options?: { cause?: unknown; logMoved?: { expectedSeq: number } }) {
    super(
      'concurrency',
      options?.logMoved
        ? `append to ${aggregate} refused: it was decided against the log at seq ${options.logMoved.expectedSeq}, and the log has moved on since`
        : `append to ${aggregate} refused: expected version ${expected}, but the aggregate is at version ${actual}`,
      { aggregate, expected, actual, ...(options?.logMoved ? { expectedSeq: options.logMoved.expectedSeq } : {}) },
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'ConcurrencyError';
    this.aggregate = aggregate;
    this.expected = expected;
    this.actual = actual;
  }
}

/**
 * A well-formed request the mesh will not carry out, with the reason. One refused because a thing
 * it names does not exist has the code not_found.
 */
export class RefusedError extends MeshError {
  constructor(message: string, details: Record<string, unknown> = {}, options?: { cause?: unknown; code?: 'refused' | 'not_found' }) {
    super(options?.code ?? 'refused', message, details, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RefusedError';
  }
}

export class NotFoundError extends MeshError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('not_found', message, details);
    this.name = 'NotFoundError';
  }
}

/** A server the mesh depends on cannot be reached or is not set up; retrying later may work. */
export class UnavailableError extends MeshError {
  constructor(message: string, details: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super('unavailable', message, details, options);
    this.name = 'UnavailableError';
  }
}

/** A stored event that does not parse or validate. Never skipped: the reader stops on it. */
export class CorruptEventError extends MeshError {
  constructor(message: string, details: { seq: number; field: string } & Record<string, unknown>, options?: { cause?: unknown }) {
    super('corrupt_event', message, details, options);
    this.name = 'CorruptEventError';
  }
}

/** A stored event whose type or schema version this code does not know. */
export class UnknownEventError extends MeshError {
  constructor(message: string, details: { type: string; schemaVersion: number } & Record<string, unknown>) {
    super('unknown_event', message, details);
    this.name = 'UnknownEventError';
  }
}

export const exitCodeFor = (error: unknown): number => {
  if (!(error instanceof MeshError)) return 1;
  switch (error.code) {
    case 'validation':
      return 2;
    case 'refused':
      return 3;
    case 'concurrency':
      return 4;
    case 'not_found':
      return 5;
    case 'unavailable':
      return 6;
    case 'corrupt_event':
    case 'unknown_event':
      return 7;
    default: {
      // A code from another process's answer this version does not know (a controller's `internal`): a failure, not a refusal.
      const unexpected: never = error.code;
      void unexpected;
      return 1;
    }
  }
};
