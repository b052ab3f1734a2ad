import { z } from 'zod';
import { sealedSchema } from '../bus/module-identity.js';

// The vault's tools (design 32 §10: a secret travels sealed, on core request/reply, never through
// a stream). Both requests are signed, so the vault need not take the bus's word for who asks:
// `make` by the controller's key (the log's writer), `fetch` by the asking node's host key (the
// one it enrolled with). An answer to `fetch` is sealed to that node's box key and echoes the
// request's nonce inside the seal, so a copy of a request, or of an answer, gives nobody a value.

export const vaultToolSubject = (prefix: string, tool: 'make' | 'fetch' | 'keep'): string => `${prefix}.seat.mesh-vault.tool.${tool}`;

/** How long a signed request stays good: beyond it, or seen before, it is refused. */
export const REQUEST_TTL_MS = 120_000;

const name = z.string().min(1).max(200);
const base64 = z.string().regex(/^[A-Za-z0-9+/]+={0,2}$/);
const problem = z.strictObject({ what: z.string(), why: z.string(), remedy: z.string() });

export const recipientSchema = z.strictObject({
  node: name,
  /** the node's host key (ed25519): its requests are signed with it */
  signingKey: base64,
  /** the node's box key (tweetnacl): what the vault seals to */
  sealingKey: base64,
});
export type Recipient = z.infer<typeof recipientSchema>;

export const makeRequestSchema = z.strictObject({
  secret: name,
  purpose: z.string().min(1),
  version: z.number().int().positive(),
  recipients: z.array(recipientSchema),
  /**
   * The version readers hold now, during a rotation: the vault keeps it and `version`, drops any
   * other, and answers a fetch that names no version with it. Absent: `version` is current.
   */
  current: z.number().int().positive().optional(),
  at: z.string().datetime(),
  nonce: base64,
});
export type MakeRequest = z.infer<typeof makeRequestSchema>;

/** `version`: the one a declaration placed (a rotation places two); absent, the current one. */
export const fetchRequestSchema = z.strictObject({ secret: name, node: name, version: z.number().int().positive().optional(), at: z.string().datetime(), nonce: base64 });
export type FetchRequest = z.infer<typeof fetchRequestSchema>;

/**
 * The controller handing the vault one of the mesh's own secrets, made at genesis: its value
 * sealed to the vault's own key (its module's bus identity), so only that holder of mesh-vault
 * opens it. Signed by the controller like `make`.
 */
export const keepRequestSchema = z.strictObject({
  secret: name,
  purpose: z.string().min(1),
  version: z.number().int().positive(),
  sealed: sealedSchema,
  at: z.string().datetime(),
  nonce: base64,
});
export type KeepRequest = z.infer<typeof keepRequestSchema>;

/** A request and the signature over its canonical JSON. */
export const signedSchema = <T extends z.ZodTypeAny>(request: T) => z.strictObject({ request, signature: base64 });

export const refusalAnswerSchema = z.strictObject({ ok: z.literal(false), refused: z.array(problem) });

export const makeAnswerSchema = z.union([z.strictObject({ ok: z.literal(true), secret: name, version: z.number().int().positive(), made: z.boolean() }), refusalAnswerSchema]);
export type MakeAnswer = z.infer<typeof makeAnswerSchema>;

/** `kept`: false when the vault held that version with that value already. */
export const keepAnswerSchema = z.union([z.strictObject({ ok: z.literal(true), secret: name, version: z.number().int().positive(), kept: z.boolean() }), refusalAnswerSchema]);
export type KeepAnswer = z.infer<typeof keepAnswerSchema>;

export const fetchAnswerSchema = z.union([z.strictObject({ ok: z.literal(true), secret: name, node: name, sealed: sealedSchema }), refusalAnswerSchema]);
export type FetchAnswer = z.infer<typeof fetchAnswerSchema>;

/** What a fetch answer's seal holds. */
export const deliveredSchema = z.strictObject({ secret: name, node: name, version: z.number().int().positive(), nonce: base64, value: z.string().min(1) });
export type Delivered = z.infer<typeof deliveredSchema>;
