import { INT64_MAX, INT64_MIN, LIMIT, NAME_MAX_LENGTH, PET_FIELDS, PET_STATUSES, WAIT_SECONDS } from './contract.js';
import type { NewPet, PetStatus } from './contract.js';
import type { JsonValue } from '../lib/json.js';

/** Input that is well-formed but not acceptable; the message names the field and what was wrong. */
export class ValidationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ValidationError';
  }
}

/** What a client may send: every field but the id, which the store gives. */
const NEW_PET_FIELDS: readonly string[] = PET_FIELDS.filter((field) => field.kind !== 'id').map((field) => field.name);
const DECIMAL_INTEGER = /^-?[0-9]+$/;
const LEADING_ZERO = /^-?0[0-9]/;
const LEADING_ZEROS = /^(-?)0+(?=[0-9])/;

export function isPetStatus(value: unknown): value is PetStatus {
  return (PET_STATUSES as readonly unknown[]).includes(value);
}

/** Checks a parsed request body against NewPet exactly: unknown fields, `id` among them, are refused. */
export function validateNewPet(body: JsonValue): NewPet {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ValidationError('request body must be a JSON object (NewPet)');
  }
  for (const key of Object.keys(body)) {
    if (!NEW_PET_FIELDS.includes(key)) {
      const why = key === 'id' ? 'ids are assigned by the service' : `NewPet has only ${listed(NEW_PET_FIELDS)}`;
      throw new ValidationError(`unknown field "${key}": ${why}`);
    }
  }
  const pet: NewPet = { name: validateName(body.name), categoryId: validateCategoryId(body.categoryId) };
  const status = body.status;
  if (status !== undefined) pet.status = validateStatus(status, 'field "status"');
  return pet;
}

export function validateName(name: JsonValue | undefined): string {
  if (name === undefined) throw new ValidationError('field "name" is required');
  if (typeof name !== 'string') throw new ValidationError('field "name" must be a string');
  if (name.length === 0) throw new ValidationError('field "name" must not be empty');
  // Counted in Unicode code points, as a person counts characters; UTF-16 length is an upper bound.
  if (name.length > NAME_MAX_LENGTH && [...name].length > NAME_MAX_LENGTH) {
    throw new ValidationError(`field "name" must be at most ${NAME_MAX_LENGTH} characters`);
  }
  return name;
}

export function validateCategoryId(value: JsonValue | undefined): bigint {
  if (value === undefined) throw new ValidationError('field "categoryId" is required');
  if (typeof value !== 'bigint') {
    const why = typeof value === 'number' ? 'an integer without fraction, exponent or minus zero' : 'an integer';
    throw new ValidationError(`field "categoryId" must be ${why}`);
  }
  if (value < INT64_MIN || value > INT64_MAX) {
    throw new ValidationError('field "categoryId" is outside the int64 range and cannot be stored exactly');
  }
  return value;
}

export function validateStatus(value: unknown, field: string): PetStatus {
  if (!isPetStatus(value)) throw new ValidationError(`${field} must be one of ${PET_STATUSES.join(', ')}`);
  return value;
}

/** `a, b and c`. */
function listed(words: readonly string[]): string {
  return `${words.slice(0, -1).join(', ')} and ${words[words.length - 1] ?? ''}`;
}

/** `limit`: a plain decimal integer 1–100; `1e1`, `2.5`, `-3` and the empty string are refused. */
export function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return LIMIT.default;
  const value = integerIn(raw, LIMIT.min, LIMIT.max);
  if (value === undefined)
    throw new ValidationError(`query parameter "limit" must be an integer from ${LIMIT.min} to ${LIMIT.max}`);
  return value;
}

/**
 * `wait`: whole seconds 0–60 as a plain decimal integer, 0 without it; `1.5`, `-1`, `61` and the empty string are
 * refused.
 */
export function parseWait(raw: string | undefined): number {
  if (raw === undefined) return WAIT_SECONDS.min;
  const value = integerIn(raw, WAIT_SECONDS.min, WAIT_SECONDS.max);
  if (value === undefined)
    throw new ValidationError(
      `query parameter "wait" must be whole seconds from ${WAIT_SECONDS.min} to ${WAIT_SECONDS.max}`,
    );
  return value;
}

/** The value of plain decimal digits when it lies in [min, max]; undefined for anything else. */
function integerIn(raw: string, min: number, max: number): number | undefined {
  const value = raw.length <= 10 && /^[0-9]+$/.test(raw) ? Number(raw) : NaN;
  return value >= min && value <= max ? value : undefined;
}

/** A decimal int64 (path `petId`, query `after`), exact: refused when it is not one. */
export function parseInt64(raw: string, what: string): bigint {
  if (!DECIMAL_INTEGER.test(raw)) throw new ValidationError(`${what} must be a decimal integer`);
  // Leading zeros change nothing; beyond 19 digits no value fits in int64 (and BigInt need not see it).
  const digits = LEADING_ZERO.test(raw) ? raw.replace(LEADING_ZEROS, '$1') : raw;
  if (digits.length - (digits.startsWith('-') ? 1 : 0) > 19)
    throw new ValidationError(`${what} is outside the int64 range`);
  const value = BigInt(digits);
  if (value < INT64_MIN || value > INT64_MAX) throw new ValidationError(`${what} is outside the int64 range`);
  return value;
}
