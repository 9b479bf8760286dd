/**
 * The numbers and names of the Pet Store API v1 contract (petstore-api.md and decisions.md).
 * Validators, handlers and the OpenAPI document all read them from here, so they cannot drift.
 */
export const API_VERSION = '1.0.0';
export const BASE_PATH = '/v1';

export const PET_STATUSES = ['available', 'pending', 'sold'] as const;
export type PetStatus = (typeof PET_STATUSES)[number];

/**
 * A stored pet's fields, in the order its JSON text lists them. The codec (pet/codec.ts) writes and
 * reads a pet's bytes from this table alone: `id` a safe positive integer, `text` a JSON string of
 * 1 to NAME_MAX_LENGTH characters, `int64` exact digits, `status` one of PET_STATUSES; an optional
 * field is left out of the text when a pet has none. The id comes first: the readers find it there.
 */
export const PET_FIELDS = [
  { name: 'id', kind: 'id', optional: false },
  { name: 'name', kind: 'text', optional: false },
  { name: 'categoryId', kind: 'int64', optional: false },
  { name: 'status', kind: 'status', optional: true },
] as const;

/** A pet as a client sends it (NewPet). `categoryId` is a bigint so that every int64 stays exact. */
export interface NewPet {
  name: string;
  categoryId: bigint;
  status?: PetStatus | undefined;
}

/** A stored pet. Ids are assigned by the store: 1, 2, 3, … and always safe integers. */
export interface Pet extends NewPet {
  readonly id: number;
}

/** The pet the documentation shows. */
export const EXAMPLE_PET: Pet = { id: 1, name: 'Rex', categoryId: 7n, status: 'available' };

export const LIMIT = { min: 1, max: 100, default: 20 } as const;
/** `wait` of listPets, whole seconds an empty page waits for a matching pet; 0, the default, waits not at all. */
export const WAIT_SECONDS = { min: 0, max: 60 } as const;
export const NAME_MAX_LENGTH = 256;

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/** `GET /v1/pets/{petId}` is deprecated: RFC 9745 `Deprecation`, RFC 8594 `Sunset`, RFC 8288 successor. */
export const DEPRECATION = {
  /** The day this service first shipped, already marking getPet deprecated: 2026-11-25T00:00:00Z. */
  since: new Date('2026-11-25T00:00:00Z'),
  sunset: new Date('2030-12-05T00:00:00Z'),
} as const;

/** The headers of every getPet response; `base` is where the API is mounted (`/v1` unless prefixed). */
export function deprecationHeaders(base: string = BASE_PATH): Readonly<Record<string, string>> {
  return {
    deprecation: `@${DEPRECATION.since.getTime() / 1000}`,
    sunset: DEPRECATION.sunset.toUTCString(),
    link: `<${base}/pets>; rel="successor-version"`,
  };
}

export const AUTH_REALM = 'petstore';

/** How long an Idempotency-Key is remembered after its create, by default (decisions.md): 24 hours. */
export const IDEMPOTENCY_WINDOW_SECONDS = 24 * 60 * 60;
/** Idempotency keys remembered per API key at most, within the window (file store: they are in memory). */
export const IDEMPOTENCY_KEY_LIMIT = 100_000;

/**
 * What a key may do (decisions.md, "scopes"): `pets:read` lists and gets pets, `pets:write` creates
 * them. A key stored without scopes, or given without any, holds them all.
 */
export const SCOPES = ['pets:read', 'pets:write'] as const;
export type Scope = (typeof SCOPES)[number];
