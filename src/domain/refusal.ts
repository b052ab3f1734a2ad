import { RefusedError } from '../errors.js';

// A refusal says everything at once: each problem names what was refused, why, and what to do
// instead. Deciders collect problems and refuse once, so an operator fixes a manifest in one pass.

export interface Problem {
  /** The thing refused: a field path, a requirement, a seat. */
  what: string;
  why: string;
  remedy: string;
  /**
   * Set when what was refused names something that does not exist (a node, a module, a seat, an
   * operator, an assignment): the refusal is then a not-found (exit 5, HTTP 404), naming it.
   */
  missing?: 'node' | 'module' | 'seat' | 'operator' | 'assignment' | 'secret';
}

export class Refusal extends RefusedError {
  readonly problems: readonly Problem[];
  /** what was refused, e.g. "assigning greeter to lab3" */
  readonly subject: string;

  constructor(subject: string, problems: readonly Problem[]) {
    const lines = problems.map((p) => `  - ${p.what}: ${p.why}; ${p.remedy}`);
    super(`${subject} refused:\n${lines.join('\n')}`, { refused: problems }, problems.some((p) => p.missing !== undefined) ? { code: 'not_found' } : {});
    this.name = 'Refusal';
    this.problems = problems;
    this.subject = subject;
  }
}

export const refuseIfAny = (subject: string, problems: readonly Problem[]): void => {
  if (problems.length > 0) throw new Refusal(subject, problems);
};
