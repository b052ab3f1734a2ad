// Tests run as ES modules, compiled by swc (types are checked by `tsc --noEmit` beside them).
// The global setup starts the test stack with the same scripts as `mesh dev up`.
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/src', '<rootDir>/tests'],
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts', '.tsx'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } }],
    // The console's pages are preact components written as TSX (docs/decisions.md, "The console").
    '^.+\\.tsx$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript', tsx: true }, transform: { react: { runtime: 'automatic', importSource: 'preact' } }, target: 'es2022' }, module: { type: 'es6' } }],
  },
  globalSetup: '<rootDir>/tests/setup/global-setup.js',
  globalTeardown: '<rootDir>/tests/setup/global-teardown.js',
  // Generous: tests spawn CLI processes and servers, and CI shares two cores with all of them.
  testTimeout: 180_000,
  maxWorkers: 2,
};
