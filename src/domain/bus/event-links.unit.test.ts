import { describe, expect, it } from '@jest/globals';
import { FIXTURE_MODULES, MeshFixture, minimalModule } from '../../../tests/helpers/given.js';
import { eventLinks, eventLinksOf, subjectMatches } from './event-links.js';

// Across the whole catalogue: a consumed event no registered module emits is a finding naming the
// consumer, the declared name, the derived subject and why; an emit nobody consumes is listed.

describe('consumes set beside every emitter', () => {
  it('matches subjects as the wire does', () => {
    expect(subjectMatches('mesh.mod.*.event.>', 'mesh.mod.a.event.b.c')).toBe(true);
    expect(subjectMatches('mesh.mod.a.event.b', 'mesh.mod.a.event.b.c')).toBe(false);
    expect(subjectMatches('mesh.mod.a.event.>', 'mesh.mod.a.event')).toBe(false);
    expect(subjectMatches('mesh.mod.*.event.b', 'mesh.mod.x.event.b')).toBe(true);
  });

  it('finds a consume nothing emits, and clears it when an emitter registers', () => {
    const mesh = new MeshFixture();
    mesh.register(minimalModule('billing', { consumes: ['shop.order.placed', '*.refund.issued'] }));
    const { dangling } = eventLinksOf(mesh.state);
    expect(dangling).toEqual([
      { consumer: 'billing', declared: 'shop.order.placed', subjects: ['mesh.mod.shop.event.order.placed'], why: 'no module named shop is registered' },
      { consumer: 'billing', declared: '*.refund.issued', subjects: ['mesh.mod.*.event.refund.issued'], why: 'no registered module emits refund.issued' },
    ]);
    mesh.register(minimalModule('shop', { emits: ['order.shipped'] }));
    expect(eventLinksOf(mesh.state).dangling[0]?.why).toBe('shop emits order.shipped, none of which is order.placed');
    mesh.register(minimalModule('shop', { emits: ['order.shipped', 'order.placed', 'refund.issued'] }));
    expect(eventLinksOf(mesh.state)).toEqual({ dangling: [], unheard: [{ emitter: 'shop', event: 'order.shipped', subject: 'mesh.mod.shop.event.order.shipped' }] });
  });

  it("says when a name meant a seat's events, which a module consume does not derive to", () => {
    const mesh = new MeshFixture();
    mesh.register(minimalModule('sender', { seats: [{ name: 'sender', scope: 'mesh', emits: ['delivered', 'failed'] }], canHold: ['sender'] }));
    mesh.register(minimalModule('watcher', { consumes: ['sender.**'] }));
    expect(eventLinksOf(mesh.state).dangling).toEqual([
      expect.objectContaining({ consumer: 'watcher', declared: 'sender.**', subjects: ['mesh.mod.sender.event.>'], why: expect.stringContaining("sender is registered and emits nothing; seat sender's events (delivered, failed) are published on the seat's own subjects") }),
    ]);
  });

  it('leaves no consume of the fixtures dangling once they are all registered', () => {
    const mesh = new MeshFixture();
    for (const name of FIXTURE_MODULES) mesh.registerFixture(name);
    expect(eventLinksOf(mesh.state).dangling).toEqual([]);
  });

  it("hears every event for '**', the mesh's own facts included", () => {
    expect(eventLinks({ modules: [{ module: 'audit', emits: [], consumes: ['**'] }], seats: [{ seat: 'mesh-controller', emits: ['applied'] }] }).dangling).toEqual([]);
  });

  it('derives with the wire prefix it is given', () => {
    expect(eventLinks({ modules: [{ module: 'a', emits: [], consumes: ['b.x'] }], seats: [], prefix: 't1' }).dangling[0]?.subjects).toEqual(['t1.mod.b.event.x']);
  });
});
