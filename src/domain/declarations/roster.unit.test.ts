import { describe, expect, it } from '@jest/globals';
import { expandRoster, rosterBlocks, type Roster } from './roster.js';

// ADR 0120 of the seeds: the mesh hands a template its lists, the template writes the line.

const roster: Roster = {
  machines: [{ name: 'edge', address: '10.0.0.1' }, { name: 'ws', address: '10.0.0.5' }],
  names: [{ name: 'edge', address: '10.0.0.1' }, { name: 'shop.lab.example', address: '10.0.0.1' }, { name: 'ws', address: '10.0.0.5' }],
};

describe('a roster block', () => {
  it('repeats its line per entry, keeps the text around it, and an empty list writes nothing', () => {
    expect(expandRoster('# head\n${each:machines}${entry:address} ${entry:name}\n${end:each}# tail ${each:names}[${entry:name}]${end:each}', roster)).toBe(
      '# head\n10.0.0.1 edge\n10.0.0.5 ws\n# tail [edge][shop.lab.example][ws]',
    );
    expect(expandRoster('a${each:names}${entry:name}\n${end:each}b', { machines: [], names: [] })).toBe('ab');
    expect(expandRoster('no roster ${identity.node}', roster)).toBe('no roster ${identity.node}');
  });

  it('names every malformed token at once', () => {
    expect(rosterBlocks('${end:each}${each:hosts}${entry:name}${end:range}${each:names}').problems).toEqual([
      '${end:each} closes no ${each:…} block',
      '${each:hosts} names no list of the roster: write ${each:machines} or ${each:names}',
      '${entry:name} stands outside any ${each:…} block, so there is no entry to read',
      '${end:range} closes nothing: a block ends with ${end:each}',
      '${each:names} is never closed: end the block with ${end:each}',
    ]);
  });
});
