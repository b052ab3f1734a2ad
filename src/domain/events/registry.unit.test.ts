import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { defineEvent, EventRegistry } from './registry.js';

const Renamed = defineEvent({
  type: 'person.renamed',
  version: 3,
  schema: z.object({ first: z.string(), last: z.string(), title: z.string() }).strict(),
  upcasters: {
    1: (data) => {
      const [first = '', ...rest] = (data as { name: string }).name.split(' ');
      return { first, last: rest.join(' ') };
    },
    2: (data) => ({ ...(data as object), title: '' }),
  },
});

describe('the event registry', () => {
  const registry = new EventRegistry([Renamed]);

  it('carries data stored at version 1 through every upcaster to the current version', () => {
    expect(registry.upcast('person.renamed', 1, { name: 'Grace Brewster Hopper' }, { seq: 7 })).toEqual({
      version: 3,
      data: { first: 'Grace', last: 'Brewster Hopper', title: '' },
    });
    expect(registry.upcast('person.renamed', 2, { first: 'Grace', last: 'Hopper' }, { seq: 8 }).data).toEqual({ first: 'Grace', last: 'Hopper', title: '' });
    expect(registry.upcast('person.renamed', 3, { first: 'G', last: 'H', title: 'RAdm' }, { seq: 9 }).data).toEqual({ first: 'G', last: 'H', title: 'RAdm' });
  });

  it('refuses a version newer than the code, and an unknown type, loudly', () => {
    expect(() => registry.upcast('person.renamed', 4, {}, { seq: 10 })).toThrow(/schema version 4, newer than this code knows \(version 3\)/);
    expect(() => registry.upcast('person.vanished', 1, {}, { seq: 11 })).toThrow(/unknown event type person\.vanished at seq 11/);
  });

  it('will not define an event whose history has a hole', () => {
    expect(() => defineEvent({ type: 'person.moved', version: 3, schema: z.object({}), upcasters: { 1: (d) => d } })).toThrow(/no upcaster from version 2/);
  });

  it('validates new data at the current version, naming the field', () => {
    expect(() => registry.validateNew('person.renamed', { first: 'A', last: 'B' }, 'events.0')).toThrow(/events\.0\.data\.title/);
    expect(() => registry.validateNew('person.nobody', {}, 'events.0')).toThrow(/unknown event type person\.nobody/);
  });
});
