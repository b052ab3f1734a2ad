import { describe, expect, it } from '@jest/globals';
import { MeshFixture, minimalModule } from '../../../tests/helpers/given.js';
import { NAME_MAX } from '../limits.js';
import { valueProblems } from './value-checks.js';
import { registeredModules } from './state.js';

// The range of each value a manifest carries, checked at registration beside its shape.

const portDefault = (value: unknown) => minimalModule('web', { requires: [{ name: 'bus', contract: 'mesh-bus', provider: 'module', seat: 'mesh-broker' }, { name: 'listen', contract: 'value', provider: 'operator', type: 'port', default: value }] });

describe('the values of a manifest', () => {
  it.each([-1, 0, 1.5, 70_000, 1e30, '8080', true])('refuses a port default of %p, naming the field, the value and the remedy', (value) => {
    const problems = valueProblems(portDefault(value));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ what: 'requires.1.default' });
    expect(problems[0]?.why).toContain(`${JSON.stringify(value)} is not a port: a whole number from 1 to 65535`);
    expect(problems[0]?.remedy).toMatch(/--set listen=VALUE/);
  });

  it.each([1, 8080, 65_535])('takes a port default of %p', (value) => {
    expect(valueProblems(portDefault(value))).toEqual([]);
  });

  it('holds a number, boolean or string default to its declared type, and leaves an untyped one alone', () => {
    const typed = (type: string | undefined, value: unknown) =>
      valueProblems(minimalModule('m', { requires: [{ name: 'v', contract: 'value', provider: 'operator', ...(type ? { type } : {}), default: value }] }));
    expect(typed('number', 'ninety')).toHaveLength(1);
    expect(typed('number', 90)).toEqual([]);
    expect(typed('boolean', 'yes')).toHaveLength(1);
    expect(typed('string', 3)).toHaveLength(1);
    expect(typed(undefined, 3)).toEqual([]);
  });

  it(`refuses a module or seat name over ${NAME_MAX} characters with the reason, and other names over 63`, () => {
    const long = `a${'b'.repeat(299)}`;
    const problems = valueProblems({
      name: long,
      seats: [{ name: `s${'x'.repeat(NAME_MAX)}`, scope: 'mesh' }],
      requires: [{ name: `r${'x'.repeat(63)}`, contract: 'directory', provider: 'host' }],
      resources: { containers: [{ name: `c${'x'.repeat(63)}`, image: { built: true } }] },
    });
    expect(problems.map((p) => p.what)).toEqual(['name', 'seats.0.name', 'requires.0.name', 'resources.containers.0.name']);
    expect(problems[0]?.why).toMatch(/at most 31 characters, and "a?b+…" has 300: .*PostgreSQL identifier and a DNS label \(63 bytes\): 31 \+ 1 \+ 31/);
    expect(valueProblems({ name: 'a'.repeat(NAME_MAX) })).toEqual([]);
  });

  it('refuses a retain of no time or beyond ten years; the schema names one that is no duration', () => {
    const retain = (value: string) => valueProblems(minimalModule('q', { seats: [{ name: 'queue', scope: 'mesh', accepts: [{ verb: 'send', retain: value }] }] }));
    expect(retain('0s')[0]).toMatchObject({ what: 'seats.0.accepts.0.retain', why: expect.stringContaining('no time at all') });
    expect(retain('99999999999999d')[0]?.why).toMatch(/longer than 3650d/);
    expect(retain('7d')).toEqual([]);
    expect(retain('soon')).toEqual([]);
  });

  it('refuses a blank recipe', () => {
    expect(valueProblems({ name: 'app', build: { recipe: '   ' } })[0]).toMatchObject({ what: 'build.recipe' });
  });

  it('is part of registration: the refusal lists every problem at once and records nothing', () => {
    const mesh = new MeshFixture();
    const problems = mesh.refusal({ type: 'register-module', manifest: { ...portDefault(-1), name: 'w'.repeat(40) } });
    expect(problems.map((p) => p.what)).toEqual(expect.arrayContaining(['name', 'requires.1.default']));
    expect([...registeredModules(mesh.state.catalogue)]).toEqual([]);
  });
});
