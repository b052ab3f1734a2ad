import { describe, expect, it } from '@jest/globals';
import { probeDatabase } from '../../src/dev/database-probe.js';
import { testStack } from '../setup/test-stack.js';

// `npm run probe:security`'s database attacks, against the test stack's PostgreSQL: every one refused.

describe("the database's attack list", () => {
  it('is refused, every attack, by the server', async () => {
    const stack = testStack();
    const outcomes = await probeDatabase({ dir: stack.dir, port: stack.ports.postgres });
    expect(outcomes.filter((o) => !o.refused)).toEqual([]);
    // every role was tried with its own password, so the refusals are the server's, not a missing file's
    expect(outcomes.filter((o) => o.attack.includes('COPY'))).toHaveLength(3);
  });
});
