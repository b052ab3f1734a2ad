// The mesh's own seats (ADR 0122: data, defined by events at genesis; ADR 0121: named for their
// scope, `mesh-*` one per mesh, `node-*` one per machine). Each names the record that made it.

export interface SystemSeat {
  name: string;
  scope: 'mesh' | 'node';
  delivers: string | null;
  reserved: boolean;
  decided: string;
  protocol: { accepts: { verb: string; retain: string }[]; emits: string[]; serves: string[] };
}

const none = { accepts: [], emits: [], serves: [] };

export const SYSTEM_SEATS: readonly SystemSeat[] = [
  { name: 'mesh-controller', scope: 'mesh', delivers: null, reserved: false, decided: 'ADR 0110, ADR 0132', protocol: { accepts: [], emits: ['applied', 'refused', 'crash-looping', 'stalled'], serves: [] } },
  { name: 'mesh-store', scope: 'mesh', delivers: null, reserved: false, decided: 'ADR 0110', protocol: none },
  { name: 'mesh-broker', scope: 'mesh', delivers: 'mesh-bus', reserved: false, decided: 'ADR 0128, ADR 0131', protocol: none },
  { name: 'mesh-vault', scope: 'mesh', delivers: 'secret', reserved: true, decided: 'ADR 0110, ADR 0113', protocol: none },
  { name: 'mesh-catalog', scope: 'mesh', delivers: null, reserved: false, decided: 'ADR 0126', protocol: none },
  { name: 'mesh-build-machine', scope: 'mesh', delivers: null, reserved: false, decided: 'ADR 0121, ADR 0129', protocol: { accepts: [{ verb: 'build', retain: '7d' }], emits: ['built', 'failed'], serves: [] } },
  { name: 'mesh-private-network', scope: 'mesh', delivers: null, reserved: false, decided: 'ADR 0121', protocol: none },
  { name: 'mesh-artifact-store', scope: 'mesh', delivers: 'artifact-store', reserved: false, decided: 'ADR 0121 (R121.4)', protocol: none },
  { name: 'mesh-npm-package-registry', scope: 'mesh', delivers: 'npm-package-registry', reserved: false, decided: 'ADR 0109, ADR 0121 (R121.4)', protocol: none },
  { name: 'mesh-proxy', scope: 'mesh', delivers: 'route', reserved: false, decided: 'ADR 0007, ADR 0108', protocol: none },
  { name: 'mesh-git', scope: 'mesh', delivers: 'git', reserved: false, decided: 'ADR 0111, ADR 0121 (R121.4)', protocol: none },
  { name: 'node-dns-resolver', scope: 'node', delivers: null, reserved: false, decided: 'ADR 0121', protocol: none },
  { name: 'node-resolver-config', scope: 'node', delivers: null, reserved: false, decided: 'ADR 0121', protocol: none },
  { name: 'node-packet-filter', scope: 'node', delivers: null, reserved: false, decided: 'ADR 0121', protocol: none },
  { name: 'node-intrusion-prevention', scope: 'node', delivers: null, reserved: false, decided: 'ADR 0121', protocol: none },
  { name: 'node-uplink', scope: 'node', delivers: null, reserved: false, decided: 'ADR 0117, ADR 0121', protocol: none },
];

/** Seats that name which assignment the mesh itself uses; a requirement may not name them (R110.6). */
export const FOUNDATION_SEATS = new Set(['mesh-controller', 'mesh-store', 'mesh-broker']);

export const SYSTEM_PREFIXES = ['mesh-', 'node-'] as const;
export const hasSystemPrefix = (name: string): boolean => SYSTEM_PREFIXES.some((prefix) => name.startsWith(prefix));
