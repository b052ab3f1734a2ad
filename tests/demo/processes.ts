import { readdirSync, readFileSync } from 'node:fs';

// What of ours is still running, read from /proc: any process whose command line names the stack's
// folder or one of its ports, and any socket listening on one of those ports. PostgreSQL's workers
// rename their command lines, so a listener is looked for separately from a command line.

export interface OurProcess {
  pid: number;
  commandLine: string;
}

const namesPort = (token: string, port: number): boolean =>
  token === String(port) || new RegExp(`[:=]${port}(?![0-9])`).test(token);

export const processesNaming = (dir: string, ports: readonly number[]): OurProcess[] => {
  const found: OurProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    let tokens: string[];
    try {
      tokens = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      continue; // gone while we looked
    }
    if (tokens.some((t) => t.includes(dir) || ports.some((port) => namesPort(t, port)))) found.push({ pid, commandLine: tokens.join(' ') });
  }
  return found;
};

/** Sockets in LISTEN state on these ports: `{ port, address }`, the address as the kernel writes it (hex). */
export const listeners = (ports: readonly number[]): { port: number; address: string; family: 'tcp' | 'tcp6' }[] => {
  const found: { port: number; address: string; family: 'tcp' | 'tcp6' }[] = [];
  for (const family of ['tcp', 'tcp6'] as const) {
    let table: string;
    try {
      table = readFileSync(`/proc/net/${family}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of table.trim().split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state !== '0A' || !local) continue;
      const [address, portHex] = local.split(':');
      const port = Number.parseInt(portHex ?? '', 16);
      if (ports.includes(port)) found.push({ port, address: address ?? '', family });
    }
  }
  return found;
};

/** 127.0.0.1 as /proc/net/tcp writes it (little-endian hex). */
export const LOOPBACK_HEX = '0100007F';
