import { describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { PrometheusMetrics } from '../adapters/prometheus-metrics.js';
import { nodeOfControlSubject, refuseImpersonation, speakerOfReply } from './speaker.js';

describe('who speaks, from the wire', () => {
  it('reads the node from a control subject, and nothing from another', () => {
    expect(nodeOfControlSubject('mesh.control.beta.report', 'mesh', 'report')).toBe('beta');
    expect(nodeOfControlSubject('t1.control.alpha.alive', 't1', 'alive')).toBe('alpha');
    expect(nodeOfControlSubject('mesh.control.beta.alive', 'mesh', 'report')).toBeUndefined();
    expect(nodeOfControlSubject('other.control.beta.report', 'mesh', 'report')).toBeUndefined();
    expect(nodeOfControlSubject('mesh.control.a.b.report', 'mesh', 'report')).toBeUndefined();
  });

  it("reads whose answer a reply is from the inbox prefixes the mesh composes, and nobody's from any other", () => {
    expect(speakerOfReply('_INBOX.host.beta.Xa1b2.7')).toEqual({ kind: 'host', node: 'beta' });
    expect(speakerOfReply('_INBOX.person.ada.Xa1b2.7')).toEqual({ kind: 'operator', operator: 'ada' });
    expect(speakerOfReply('_INBOX.enrol.00000000000000aa.Xa1b2')).toEqual({ kind: 'enrolment', tokenId: '00000000000000aa' });
    expect(speakerOfReply('_INBOX.controller.Xa1b2.3')).toEqual({ kind: 'controller' });
    for (const other of ['_INBOX.admin.Xa1b2.3', '_INBOX.Xa1b2.3', '_INBOX.host', 'reply.host.beta.x', undefined]) expect(speakerOfReply(other)).toBeUndefined();
  });

  it('refuses naming who tried and whom it claimed, counted by entry and identity; the identities counted by name are bounded', async () => {
    const lines: string[] = [];
    const metrics = new PrometheusMetrics();
    const problem = refuseImpersonation({ logger: pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) }), metrics }, { entry: 'report', identity: 'host beta', claimed: 'node alpha', field: 'node' });
    expect(problem).toMatchObject({ what: 'node', why: expect.stringContaining('host beta speaks only for itself, and this report names node alpha') });
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({ level: 40, entry: 'report', identity: 'host beta', claimed: 'node alpha' });
    for (let i = 0; i < 300; i++) metrics.impersonationRefused('heartbeat', `host h${i}`);
    const text = await metrics.registry.metrics();
    expect(text).toContain('mesh_impersonation_refused_total{entry="report",identity="host beta"} 1');
    expect(text).toContain('mesh_impersonation_refused_total{entry="heartbeat",identity="other"} 45');
  });
});
