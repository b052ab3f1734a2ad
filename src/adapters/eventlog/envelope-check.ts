import { AGGREGATE_TOKEN, EVENT_TYPE, type Commit } from '../../domain/events/envelope.js';
import { SIGNED_FOR } from '../../domain/operators/signed-command.js';

// The envelope of a commit checked by hand: the read path's hot loop, where zod's general parser
// (and the copies it returns) cost more than everything else the projector does. It accepts only
// what `commitSchema` accepts, and maybe less: anything it turns down goes to zod, which either
// accepts it after all or names the field that is wrong. So it changes speed, never outcomes.

const ENVELOPE_KEYS = new Set(['id', 'type', 'schemaVersion', 'aggregate', 'time', 'actor', 'commandId', 'causationId', 'correlationId', 'data']);
const TEXT_KEYS = ['id', 'actor', 'commandId', 'causationId', 'correlationId'] as const;

// RFC 3339 with an offset, each part in range; the day is checked against its month below.
const TIME = /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/;

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const validTime = (value: unknown): boolean => {
  if (typeof value !== 'string' || !TIME.test(value)) return false;
  // Days up to 28 exist in every month; only the rest are checked against theirs.
  const day = (value.charCodeAt(8) - 48) * 10 + (value.charCodeAt(9) - 48);
  if (day <= 28) return true;
  const year = Number(value.slice(0, 4));
  const month = Number(value.slice(5, 7));
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate() && year >= 1;
};

// Two or more tokens joined by dots, each an AGGREGATE_TOKEN: one expression instead of a split.
const TOKEN = AGGREGATE_TOKEN.source.replace(/^\^/, '').replace(/\$$/, '');
const AGGREGATE = new RegExp(`^${TOKEN}(?:\\.${TOKEN})+$`);

const validAggregate = (value: unknown): boolean => typeof value === 'string' && AGGREGATE.test(value);

const validEnvelope = (value: unknown): boolean => {
  if (!isRecord(value)) return false;
  // Own keys only (an inherited one is not in the list), exactly the envelope's, each once.
  const keys = Object.keys(value);
  if (keys.length !== ENVELOPE_KEYS.size) return false;
  for (const key of keys) if (!ENVELOPE_KEYS.has(key)) return false;
  for (const key of TEXT_KEYS) {
    const text = value[key];
    if (typeof text !== 'string' || text.length === 0) return false;
  }
  const { type, schemaVersion } = value;
  return (
    typeof type === 'string' &&
    EVENT_TYPE.test(type) &&
    typeof schemaVersion === 'number' &&
    Number.isSafeInteger(schemaVersion) &&
    schemaVersion > 0 &&
    validAggregate(value.aggregate) &&
    validTime(value.time)
  );
};

const SIGNED_COMMAND_KEYS = new Set(['commandId', 'operator', 'command', 'time', 'signature', 'purpose']);

// The operator's signed command a commit carries (signedCommandSchema): every text non-empty
// except the time, the command a record of any values, its purpose one of SIGNED_FOR or absent
// (a command signed before the purpose was signed).
const validSignedCommand = (value: unknown): boolean => {
  if (!isRecord(value)) return false;
  const keys = Object.keys(value);
  if (keys.length !== SIGNED_COMMAND_KEYS.size - ('purpose' in value ? 0 : 1)) return false;
  for (const key of keys) if (!SIGNED_COMMAND_KEYS.has(key)) return false;
  const { commandId, operator, command, time, signature, purpose } = value;
  if (purpose !== undefined && !(SIGNED_FOR as readonly unknown[]).includes(purpose)) return false;
  return typeof commandId === 'string' && commandId.length > 0 && typeof operator === 'string' && operator.length > 0 && typeof signature === 'string' && signature.length > 0 && typeof time === 'string' && isRecord(command);
};

/** True when `raw` is certainly a valid commit, as parsed JSON (no own prototype tricks, no extra keys). */
export const isValidCommit = (raw: unknown): raw is Commit => {
  if (!isRecord(raw)) return false;
  let keys = 0;
  for (const key in raw) {
    if (!Object.hasOwn(raw, key) || (key !== 'firstVersion' && key !== 'events' && key !== 'command')) return false;
    keys++;
  }
  const { firstVersion, events, command } = raw;
  if (command !== undefined && !validSignedCommand(command)) return false;
  return keys === (command === undefined ? 2 : 3) && typeof firstVersion === 'number' && Number.isSafeInteger(firstVersion) && firstVersion > 0 && Array.isArray(events) && events.length > 0 && events.every(validEnvelope);
};
