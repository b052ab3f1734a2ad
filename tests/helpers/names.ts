import { randomBytes } from 'node:crypto';

/** A name no other test uses: tests never share streams, subjects or aggregates. */
export const uniqueName = (prefix: string): string => `${prefix}${randomBytes(5).toString('hex')}`;
