import { declarationSchema, type Declaration } from '../domain/declarations/declaration.js';

// Whether a message on the node's subject becomes what the node must run. A declaration is state
// and its sequence only grows, so one lower than the sequence accepted is stale (a rebuild
// re-publishing an old one, a replayed message) and refused — the node keeps what it applied.

export type Judgement =
  | { accepted: true; declaration: Declaration; changed: boolean }
  | { accepted: false; sequence: number; digest: string; refusal: string; resources: Declaration['assignments'][number]['resources'] };

export const judgeDeclaration = (node: string, payload: unknown, current: Declaration | undefined): Judgement => {
  const parsed = declarationSchema.safeParse(payload);
  const raw = (payload ?? {}) as { sequence?: unknown; digest?: unknown };
  const sequence = typeof raw.sequence === 'number' && Number.isInteger(raw.sequence) && raw.sequence >= 0 ? raw.sequence : 0;
  const digest = typeof raw.digest === 'string' ? raw.digest : '';
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join('.') : 'declaration';
    return { accepted: false, sequence, digest, resources: [], refusal: `not a valid declaration: ${where}: ${issue?.message ?? 'invalid'}` };
  }
  const declaration = parsed.data;
  const refuse = (refusal: string): Judgement => ({ accepted: false, sequence, digest, refusal, resources: declaration.assignments.flatMap((a) => a.resources) });
  if (declaration.node !== node) return refuse(`the declaration is for node ${declaration.node}, and this is node ${node}`);
  if (current && declaration.sequence < current.sequence) {
    return refuse(`sequence ${declaration.sequence} is lower than ${current.sequence}, the sequence this node has applied`);
  }
  if (current && declaration.sequence === current.sequence && declaration.digest !== current.digest) {
    return refuse(`sequence ${declaration.sequence} was applied with digest ${current.digest}; a changed declaration needs a higher sequence`);
  }
  return { accepted: true, declaration, changed: current?.digest !== declaration.digest || current.sequence !== declaration.sequence };
};
