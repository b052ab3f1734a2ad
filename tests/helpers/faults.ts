// What the fault tests (tests/faults) share: their sizes from the environment, so CI runs them
// small and an operator full size, and one way to print what each did and what it found.

/** A whole number from the environment (MESH_FAULT_*), else the CI-sized default. */
export const faultCount = (name: string, fallback: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name}=${raw} is not a positive whole number`);
  return value;
};

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Printed whatever the outcome, so a run's output says what was done and what was found. */
export const report = (title: string, lines: Record<string, string>): void => {
  process.stdout.write(`\n[fault] ${title}\n${Object.entries(lines).map(([what, line]) => `  ${what}: ${line}`).join('\n')}\n`);
};

/** The median and the largest of some durations, in ms. */
export const p50AndMax = (values: readonly number[]): { p50: number; max: number } => {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: sorted[Math.floor((sorted.length - 1) / 2)] ?? 0, max: sorted[sorted.length - 1] ?? 0 };
};

/** What a test set up, taken down after it in reverse order (`after` is jest's afterEach or afterAll), whatever failed. */
export const cleanupsAfter = (after: (fn: () => Promise<void>) => void): ((cleanup: () => Promise<unknown>) => void) => {
  const cleanups: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });
  return (cleanup) => void cleanups.push(cleanup);
};
