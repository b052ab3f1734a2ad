import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { CorruptEventError } from '../../errors.js';
import { defineEvent, EventRegistry, isRecord, registryOf } from './registry.js';

const Renamed = defineEvent({
  type: 'person.renamed',
  version: 3,
  schema: z.object({ first: z.string(), last: z.string(), title: z.string() }).strict(),
  upcasters: {
    1: (data) => {
      const [first = '', ...rest] = (isRecord(data) && typeof data.name === 'string' ? data.name : '').split(' ');
      return { first, last: rest.join(' ') };
    },
    2: (data) => (isRecord(data) ? { ...data, title: '' } : data),
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

  describe('decoding, typed by the schemas it was made from', () => {
    const Moved = defineEvent({ type: 'person.moved', version: 1, schema: z.strictObject({ city: z.string(), since: z.number().int() }) });
    const typed = registryOf([Renamed, Moved]);

    it('yields the union of its events: switching on type reads the data that type has, upcast to the current version', () => {
      const said = (event: ReturnType<typeof typed.decode>): string => {
        switch (event.type) {
          case 'person.renamed':
            return `${event.data.title} ${event.data.first} ${event.data.last}`.trim();
          case 'person.moved':
            return `moved to ${event.data.city} in ${event.data.since}`;
          default: {
            const unreachable: never = event;
            return unreachable;
          }
        }
      };
      expect(said(typed.decode('person.renamed', 1, { name: 'Grace Hopper' }, { seq: 3, field: 'events.0' }))).toBe('Grace Hopper');
      expect(said(typed.decode('person.moved', 1, { city: 'Arlington', since: 1943 }, { seq: 4, field: 'events.1' }))).toBe('moved to Arlington in 1943');
      expect(typed.decode('person.renamed', 2, { first: 'G', last: 'H' }, { seq: 5, field: 'events.0' })).toEqual({ type: 'person.renamed', schemaVersion: 3, data: { first: 'G', last: 'H', title: '' } });
    });

    it('refuses data its schema does not take, naming the sequence and the field', () => {
      const refused = (): unknown => typed.decode('person.moved', 1, { city: 'Arlington', since: 'the war' }, { seq: 12, field: 'events.2' });
      expect(refused).toThrow(CorruptEventError);
      expect(refused).toThrow('log message at seq 12 (person.moved v1): events.2.data.since: Invalid input: expected number, received string');
      expect(() => typed.decode('person.moved', 1, { city: 'Arlington', since: 1943, by: 'train' }, { seq: 13, field: 'events.0' })).toThrow(/seq 13 .*events\.0\.data/);
      expect(() => typed.validateNew('person.moved', { city: 'Arlington' }, 'events.0')).toThrow(/events\.0\.data\.since/);
    });
  });
});
