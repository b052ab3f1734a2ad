import { z } from 'zod';
import { defineEvent } from '../events/registry.js';

// The mesh's trust root (issue 129 of the seeds): the root certificate of the mesh's own
// authority, public material, recorded in the log so every machine of the private network can be
// told to trust it. Setting another is a rotation.

export const TRUST_AGGREGATE = 'trust.root';

export const TrustRootSet = defineEvent({
  type: 'trust.root-set',
  version: 1,
  schema: z.strictObject({
    /** the certificate, PEM */
    certificate: z.string().min(1),
    /** sha256 of its DER encoding, `sha256:<hex>` */
    fingerprint: z.string().regex(/^sha256:[0-9a-f]{64}$/),
    /** its subject, for a person reading the log */
    subject: z.string(),
    /** when it stops being valid, ISO 8601 */
    validTo: z.string(),
  }),
});

export const trustEvents = [TrustRootSet] as const;
