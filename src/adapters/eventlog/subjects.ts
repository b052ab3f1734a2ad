import { ValidationError } from '../../errors.js';
import { aggregateSchema } from '../../domain/events/envelope.js';

// `mesh.log.<kind>.<id…>`: one subject per aggregate, so per-subject optimistic concurrency
// guards each aggregate while the stream keeps one total order.

export const assertAggregate = (aggregate: string): string => {
  const parsed = aggregateSchema.safeParse(aggregate);
  if (!parsed.success) {
    throw new ValidationError(`invalid aggregate "${aggregate}": ${parsed.error.issues[0]?.message ?? 'invalid'}`, {
      field: 'aggregate',
      aggregate,
    });
  }
  return aggregate;
};

export const subjectOf = (prefix: string, aggregate: string): string => `${prefix}.${assertAggregate(aggregate)}`;

export const aggregateOf = (prefix: string, subject: string): string => subject.slice(prefix.length + 1);

const PATTERN_TOKEN = /^([A-Za-z0-9][A-Za-z0-9_-]*|\*|>)$/;

/** A filter for reading: an aggregate, a kind alone (every aggregate of it), or a pattern with `*` / `>`. */
export const filterSubjectOf = (prefix: string, filter: string): string => {
  const tokens = filter.split('.');
  const valid = tokens.every((token, i) => PATTERN_TOKEN.test(token) && (token !== '>' || i === tokens.length - 1));
  if (!valid) {
    throw new ValidationError(`invalid aggregate filter "${filter}": use \`kind\`, \`kind.id\`, or a pattern with \`*\` and a final \`>\``, {
      field: 'aggregate',
      aggregate: filter,
    });
  }
  return tokens.length === 1 && tokens[0] !== '>' && tokens[0] !== '*' ? `${prefix}.${filter}.>` : `${prefix}.${filter}`;
};
