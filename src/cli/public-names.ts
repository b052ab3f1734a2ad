import type { PublicNameOn } from '../projections/mesh/routes.js';

// `mesh node show`'s line on a node's public names (issue 20): the domain they are under and each
// name the holder of mesh-proxy handed back to a module on it, now or as of `--at`.

export const publicNamesLine = (node: string, domain: string | null, names: readonly PublicNameOn[]): string => {
  if (domain === null) return `public domain: none, so no route has a public name here (mesh node domain ${node} D)`;
  const served = names.map((n) => `${n.publicName} (${n.module}, ${n.redirect ? `redirect to route ${n.route}` : `route ${n.route}`})`);
  return `public domain: ${domain}; public names it serves: ${served.join(', ') || 'none'}`;
};
