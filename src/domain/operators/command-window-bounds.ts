// How long a signed command may stay good, at least and at most: a module of its own, so the CLI's
// definition of `mesh operator window` names the bounds without loading the schemas (zod).
export const COMMAND_WINDOW_BOUNDS = { minSeconds: 30, maxSeconds: 60 * 60, written: '30s to 1h' } as const;
