import { MeshError, ValidationError, exitCodeFor } from '../errors.js';
import { Refusal } from '../domain/refusal.js';
import { sourceMappedStack } from './source-map.js';

export interface Output {
  json: boolean;
  /** `-o wide`: every column in full, however wide; otherwise a table fits TABLE_WIDTH */
  wide: boolean;
  line(text: string): void;
  data(value: unknown): void;
}

/** `-o FORMAT`: the one format a table takes besides its default is `wide`. */
export const outputFormat = (value: string | undefined): boolean => {
  if (value === undefined) return false;
  if (value === 'wide') return true;
  throw new ValidationError(`-o "${value}" is not a format: give -o wide for every column in full (or --json)`, { field: '--output', value });
};

export const output = (json: boolean, format?: string): Output => ({
  json,
  wide: outputFormat(format),
  line: (text) => {
    if (!json) process.stdout.write(`${text}\n`);
  },
  data: (value) => {
    process.stdout.write(`${JSON.stringify(value)}\n`);
  },
});

/** Progress and notices go to stderr, so stdout stays the answer (and valid JSON with --json). */
export const say = (text: string): void => {
  process.stderr.write(`${text}\n`);
};

export const reportError = (error: unknown, json: boolean): number => {
  const code = exitCodeFor(error);
  if (json) {
    // Every refusal has one shape: { ok: false, refused: [{ what, why, remedy }] }.
    const refused =
      error instanceof Refusal
        ? error.problems
        : [{ what: error instanceof MeshError ? String(error.details.field ?? error.code) : 'internal', why: (error as Error)?.message ?? String(error), remedy: '' }];
    const details = error instanceof Refusal ? {} : error instanceof MeshError ? error.details : {};
    const body = { ok: false, refused, error: { code: error instanceof MeshError ? error.code : 'internal', ...details } };
    process.stdout.write(`${JSON.stringify(body)}\n`);
  } else {
    const message = error instanceof MeshError ? error.message : `internal error: ${(error as Error)?.stack ? sourceMappedStack((error as Error).stack as string) : String(error)}`;
    process.stderr.write(`mesh: ${message}\n`);
  }
  return code;
};

/** Every human-readable table fits this many columns. */
export const TABLE_WIDTH = 100;
const CELL_MAX = 40;
/** the least room a table's last column is given */
const LAST_MIN = 20;

const clip = (cell: string, width: number): string => (cell.length <= width ? cell : `${cell.slice(0, width - 1)}…`);

/** Words in lines of at most `width`; a word longer than that is cut across lines. */
export const wrap = (text: string, width: number): string[] => {
  const lines: string[] = [];
  let line = '';
  for (let word of text.split(' ')) {
    while (word.length > width) {
      if (line !== '') lines.push(line);
      lines.push(word.slice(0, width));
      line = '';
      word = word.slice(width);
    }
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, line];
};

/** A line of prose in at most TABLE_WIDTH columns (unless -o wide): what follows the first line is indented by `hang`. */
export const proseLine = (out: Output, text: string, hang = 4): void => {
  if (out.wide) {
    out.line(text);
    return;
  }
  const lead = /^ */.exec(text)?.[0] ?? '';
  const [first = '', ...more] = wrap(text.slice(lead.length), TABLE_WIDTH - lead.length);
  out.line(`${lead}${first}`);
  if (more.length > 0) for (const line of wrap(more.join(' '), TABLE_WIDTH - lead.length - hang)) out.line(`${lead}${' '.repeat(hang)}${line}`);
};

/**
 * A table with a header row, in at most TABLE_WIDTH columns: each column but the last as wide as
 * its widest cell (at most CELL_MAX, longer cells clipped with …), the last wrapped beneath itself.
 * With `-o wide`, every cell in full on one line.
 */
export const table = (out: Output, header: readonly string[], rows: readonly (readonly string[])[], options: { indent?: number } = {}): void => {
  const indent = ' '.repeat(options.indent ?? 0);
  const last = header.length - 1;
  if (out.wide) {
    // Every cell in full: columns as wide as their widest cell, nothing clipped or wrapped.
    const full = header.slice(0, last).map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
    for (const row of [header, ...rows]) out.line(`${indent}${[...full.map((w, i) => (row[i] ?? '').padEnd(w)), row[last] ?? ''].join('  ')}`.trimEnd());
    return;
  }
  const widths = header.slice(0, last).map((h, i) => Math.min(CELL_MAX, Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length))));
  // The last column keeps at least LAST_MIN: the widest of the others gives way, a column at a time, down to its header.
  const room = TABLE_WIDTH - LAST_MIN - indent.length - 2 * widths.length;
  for (let over = widths.reduce((sum, w) => sum + w, 0) - room; over > 0; over--) {
    const widest = widths.reduce((at, w, i) => (w - (header[i] ?? '').length > (widths[at] ?? 0) - (header[at] ?? '').length ? i : at), 0);
    if ((widths[widest] ?? 0) <= (header[widest] ?? '').length) break;
    widths[widest] = (widths[widest] ?? 0) - 1;
  }
  const lastStart = indent.length + widths.reduce((sum, w) => sum + w + 2, 0);
  const lastWidth = Math.max(LAST_MIN, TABLE_WIDTH - lastStart);
  for (const row of [header, ...rows]) {
    const lead = widths.map((w, i) => clip(row[i] ?? '', w).padEnd(w)).join('  ');
    const [first = '', ...more] = wrap(row[last] ?? '', lastWidth);
    out.line(`${indent}${lead}${widths.length > 0 ? '  ' : ''}${first}`.trimEnd());
    for (const line of more) out.line(`${' '.repeat(lastStart)}${line}`);
  }
};
