import type { ReadViews } from './read-views.js';
import { foldingProjection } from './folding.js';
import { RowImage } from './rows.js';

// `public_domains`, `public_names` and `consumer_answers`, as evolveMesh folds
// node.public-domain-set (node.removed forgets it), route.public-name-granted, consumer.answered and assignment.removed: a
// node's domain is stated afresh; a grant replaces the name its assignment was granted before for
// the same name asked for; an answer replaces the one before; an assignment removed takes its names
// and its answers with it.

type DomainRow = { node: string; domain: string; changed_seq: number | string };
type NameRow = { public_name: string; node: string; module: string; route: string; name: string; proxy_node: string; proxy_module: string; granted_seq: number | string };
type AnswerRow = { node: string; module: string; requirement: string; provider_node: string; provider_module: string; answer: Record<string, string>; answered_seq: number | string };

interface Batch {
  domains: RowImage<DomainRow>;
  names: RowImage<NameRow>;
  answers: RowImage<AnswerRow>;
}

export const routesProjection = foldingProjection<Batch>({
  name: 'routes',
  version: 1,
  types: ['node.public-domain-set', 'node.removed', 'route.public-name-granted', 'consumer.answered', 'assignment.removed'],
  open: async (events, tx) => {
    const batch = { domains: new RowImage<DomainRow>('public_domains', ['node']), names: new RowImage<NameRow>('public_names', ['public_name']), answers: new RowImage<AnswerRow>('consumer_answers', ['node', 'module', 'requirement']) };
    const assignments = events.flatMap((e) => (e.type === 'route.public-name-granted' || e.type === 'assignment.removed' ? [{ node: e.data.node, module: e.data.module }] : e.type === 'consumer.answered' ? [e.data.consumer] : []));
    if (assignments.length > 0) {
      const pairs = JSON.stringify(assignments);
      const names = await tx.client.query<{ public_name: string }>(`SELECT p.public_name FROM ${tx.table('public_names')} p JOIN json_to_recordset($1) AS a(node text, module text) ON p.node = a.node AND p.module = a.module`, [pairs]);
      await batch.names.load(tx, names.rows);
      const answers = await tx.client.query<{ node: string; module: string; requirement: string }>(
        `SELECT c.node, c.module, c.requirement FROM ${tx.table('consumer_answers')} c JOIN json_to_recordset($1) AS a(node text, module text) ON c.node = a.node AND c.module = a.module`,
        [pairs],
      );
      await batch.answers.load(tx, answers.rows);
    }
    return batch;
  },
  apply: (batch, event) => {
    switch (event.type) {
      case 'node.public-domain-set':
        batch.domains.set({ node: event.data.node, domain: event.data.domain, changed_seq: event.seq });
        break;
      case 'node.removed':
        // Added again, it is a new machine with no domain (the nodes slice forgets it too).
        batch.domains.delete({ node: event.data.node });
        break;
      case 'route.public-name-granted': {
        const data = event.data;
        for (const before of batch.names.where((r) => r.node === data.node && r.module === data.module && r.name === data.name)) batch.names.delete({ public_name: before.public_name });
        batch.names.set({ public_name: data.publicName, node: data.node, module: data.module, route: data.route, name: data.name, proxy_node: data.proxy.node, proxy_module: data.proxy.module, granted_seq: event.seq });
        break;
      }
      case 'consumer.answered': {
        const data = event.data;
        batch.answers.set({ node: data.consumer.node, module: data.consumer.module, requirement: data.requirement, provider_node: data.provider.node, provider_module: data.provider.module, answer: data.values, answered_seq: event.seq });
        break;
      }
      case 'assignment.removed': {
        const { node, module } = event.data;
        for (const row of batch.names.where((r) => r.node === node && r.module === module)) batch.names.delete({ public_name: row.public_name });
        for (const row of batch.answers.where((r) => r.node === node && r.module === module)) batch.answers.delete({ node, module, requirement: row.requirement });
        break;
      }
      default:
        break;
    }
  },
  save: async (batch, tx) => {
    await batch.domains.save(tx);
    await batch.names.save(tx);
    await batch.answers.save(tx);
  },
});

/** A node's public domain and the public names its modules were handed back, by name: `mesh node show`. */
export const readPublicNamesOn = async ({ db, view }: ReadViews, node: string): Promise<{ domain: string | null; names: PublicNameOn[] }> => {
  const [domain, names] = await Promise.all([
    db.query<{ domain: string }>(`SELECT domain FROM ${view('public_domains')} WHERE node = $1`, [node]),
    db.query<{ public_name: string; module: string; route: string; name: string }>(`SELECT public_name, module, route, name FROM ${view('public_names')} WHERE node = $1 ORDER BY public_name`, [node]),
  ]);
  return { domain: domain.rows[0]?.domain ?? null, names: names.rows.map((r) => ({ publicName: r.public_name, module: r.module, route: r.route, redirect: r.name !== r.route })) };
};

export interface PublicNameOn {
  publicName: string;
  module: string;
  route: string;
  /** a redirect's `from`, answering with the route's URL, rather than the route's own name */
  redirect: boolean;
}
