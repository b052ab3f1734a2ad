// A marked region of a shared file, as text (ADR 0102, issue 128 of the seeds): the lines from
// `# BEGIN mesh <id>` to `# END mesh <id>`. Everything outside them is kept byte for byte, so the
// text is handled as latin1 — one character per byte — and only the region's own lines change.

export const beginMarker = (id: string): string => `# BEGIN mesh ${id}`;
export const endMarker = (id: string): string => `# END mesh ${id}`;

/** A file's bytes as text whose characters are its bytes, and back. */
export const bytesAsText = (bytes: Buffer): string => bytes.toString('latin1');
export const textAsBytes = (text: string): Buffer => Buffer.from(text, 'latin1');

/** Lines with their terminators, so joining them gives the text back exactly. */
const linesOf = (text: string): string[] => text.match(/[^\n]*\n|[^\n]+$/g) ?? [];

type Found = { ok: true; region: { first: number; last: number; block: string } | null; lines: string[] } | { ok: false; reason: string };

/** Where the region of `id` is, if anywhere; a begin without its end (or two begins) is no region to touch. */
export const findRegion = (text: string, id: string): Found => {
  const lines = linesOf(text);
  const is = (line: string, marker: string): boolean => line.replace(/\r?\n$/, '').trimEnd() === marker;
  const begins = lines.flatMap((line, i) => (is(line, beginMarker(id)) ? [i] : []));
  if (begins.length === 0) return { ok: true, region: null, lines };
  if (begins.length > 1) return { ok: false, reason: `"${beginMarker(id)}" appears ${begins.length} times` };
  const first = begins[0] as number;
  const last = lines.findIndex((line, i) => i > first && is(line, endMarker(id)));
  if (last < 0) return { ok: false, reason: `"${beginMarker(id)}" (line ${first + 1}) has no "${endMarker(id)}" after it` };
  return { ok: true, region: { first, last, block: lines.slice(first, last + 1).join('') }, lines };
};

/** The whole region as written for `content` (UTF-8, as the declaration carries it). */
export const regionBlock = (id: string, content: string): string => {
  const body = bytesAsText(Buffer.from(content, 'utf8'));
  return `${beginMarker(id)}\n${body}${body === '' || body.endsWith('\n') ? '' : '\n'}${endMarker(id)}\n`;
};

export type RegionEdit = { ok: true; text: string; found: string | null } | { ok: false; reason: string };

/**
 * The text with the region of `id` holding `block`: replaced where it stands (a region is never
 * moved), else added at the start or the end. `found` is the region that stood there before.
 */
export const writeRegion = (text: string, id: string, block: string, at: 'start' | 'end'): RegionEdit => {
  const found = findRegion(text, id);
  if (!found.ok) return found;
  if (found.region) {
    const { first, last } = found.region;
    return { ok: true, text: [...found.lines.slice(0, first), block, ...found.lines.slice(last + 1)].join(''), found: found.region.block };
  }
  if (at === 'start') return { ok: true, text: block + text, found: null };
  // A last line without its newline gets one, so the region starts on a line of its own.
  return { ok: true, text: `${text}${text === '' || text.endsWith('\n') ? '' : '\n'}${block}`, found: null };
};

/** The text with the region of `id` given back: what stood there before the mesh wrote it, or nothing. */
export const removeRegion = (text: string, id: string, before: string | null): RegionEdit => {
  const found = findRegion(text, id);
  if (!found.ok) return found;
  if (!found.region) return { ok: true, text, found: null };
  const { first, last } = found.region;
  return { ok: true, text: [...found.lines.slice(0, first), before ?? '', ...found.lines.slice(last + 1)].join(''), found: found.region.block };
};
