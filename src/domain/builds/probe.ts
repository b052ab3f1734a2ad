import { posix } from 'node:path';
import { z } from 'zod';
import type { Decision } from '../decision.js';
import { Refusal } from '../refusal.js';
import { sourceRefSchema } from './events.js';

// The build seat's probe: before an operator's build is submitted, a holder of mesh-build-machine
// (the one party that can read the repository) says whether the module's folder is at the commit.
// Asked on `<prefix>.seat.mesh-build-machine.tool.probe` (core request/reply, one holder answers);
// what it answers and what the control plane makes of it are judged here, without I/O.

export const probeRequestSchema = z.strictObject({ source: sourceRefSchema, commit: z.string().min(1), path: z.string() });
export type ProbeRequest = z.infer<typeof probeRequestSchema>;

/** Where the holder looked: the address it fetched, the commit and the folder. */
const lookedSchema = z.strictObject({ url: z.string(), commit: z.string(), path: z.string() });

export const probeAnswerSchema = z.discriminatedUnion('found', [
  z.strictObject({ found: z.literal('folder'), looked: lookedSchema, builder: z.string() }),
  /** the commit was fetched and has no folder at the path (nothing there, or a file) */
  z.strictObject({ found: z.literal('missing'), why: z.string(), looked: lookedSchema, builder: z.string() }),
  /** the holder could not tell: the repository did not answer, the commit is not in it (yet), the git work ran out of time */
  z.strictObject({ found: z.literal('unchecked'), why: z.string(), looked: lookedSchema.partial(), builder: z.string() }),
]);
export type ProbeAnswer = z.infer<typeof probeAnswerSchema>;

/** What the control plane learnt by asking: an answer, or that no holder answered (and why). */
export type ProbeOutcome = ProbeAnswer | { found: 'unanswered'; why: string };

/**
 * The path inside the commit's tree a module's `source.path` names, as git's `<commit>:<path>`
 * takes it (`.` and `./` are the root, ''); undefined for a path that leaves the repository.
 */
export const treePathOf = (path: string): string | undefined => {
  const normal = posix.normalize(path.trim() === '' ? '.' : path.trim()).replace(/\/+$/, '');
  if (posix.isAbsolute(normal) || normal === '..' || normal.startsWith('../')) return undefined;
  return normal === '.' ? '' : normal;
};

/** What a build the decision submits would be handed to look at: its source, commit and path; undefined when it submits nothing. */
export const probeRequestOf = (decision: Decision): ProbeRequest | undefined => {
  for (const event of decision.events) {
    if (event.type !== 'build.submitted') continue;
    const { source, commit, path } = event.data;
    return { source, commit, path };
  }
  return undefined;
};

const sourceName = (source: ProbeRequest['source']): string => ('seat' in source ? `${source.repository} on ${source.seat}` : source.url);

/** A build the holder found cannot start is refused, naming the module, the folder, the commit and where it looked (the repository, the ref the module follows, the path); anything else is not. */
export const probeRefusal = (module: string, request: ProbeRequest, outcome: ProbeOutcome, ref?: string): Refusal | undefined => {
  if (outcome.found !== 'missing') return undefined;
  return new Refusal(`building module ${module}`, [
    {
      what: `${module}'s source.path ${request.path}`,
      why: `the source has no folder ${request.path} at commit ${outcome.looked.commit} (${outcome.why}; looked in ${outcome.looked.url}${ref ? `, ref ${ref},` : ''} for ${request.path}, asked ${outcome.builder}): the build could not start, so nothing was submitted`,
      remedy: `correct source.path in ${module}'s manifest to the folder the module is in at that commit and register it again (mesh module register <manifest.json>), or move the module to a commit that has ${request.path} (mesh module moved ${module} COMMIT)`,
    },
  ]);
};

/** What the command's summary adds about the check, once the build is submitted. */
export const probeNote = (request: ProbeRequest, outcome: ProbeOutcome): string => {
  switch (outcome.found) {
    case 'folder':
      return `source checked: ${outcome.looked.url} has ${request.path} at ${request.commit} (asked ${outcome.builder})`;
    case 'unchecked':
      return `the source could not be checked (${outcome.builder}: ${outcome.why}); the builder will say if ${request.path} is missing at ${request.commit}`;
    case 'unanswered':
      return `the source could not be checked: no holder of mesh-build-machine answered (${outcome.why}); the job waits in the queue until a builder takes it, and says then if ${request.path} is missing from ${sourceName(request.source)} at ${request.commit}`;
    case 'missing':
      return `${request.path} is missing at ${request.commit}`;
  }
};
