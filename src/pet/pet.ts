import type { PetStatus } from './contract.js';
import { parseJson, type JsonObject } from '../lib/json.js';

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

/**
 * A pet as the file store keeps it: its exact JSON text, made once when the pet is stored (pets never
 * change), beside the id and status it is looked up by. Answering a list is then joining texts, and a
 * snapshot is writing them. `name` and `categoryId` are read back from the text when asked for, so a
 * million pets do not hold a name string and a bigint each besides their text.
 */
export class StoredPet implements Pet {
  readonly id: number;
  readonly status: PetStatus | undefined;
  /** `petJson` of this pet: the response body, the journal line, the snapshot line. */
  readonly json: string;

  /** `json` must be exactly `petJson` of the pet with this id and status; `from` makes sure of it. */
  constructor(id: number, status: PetStatus | undefined, json: string) {
    this.id = id;
    this.status = status;
    this.json = json;
  }

  static from(pet: Pet): StoredPet {
    return pet instanceof StoredPet ? pet : new StoredPet(pet.id, pet.status, formatPet(pet));
  }

  get name(): string {
    return this.#fields()['name'] as string;
  }

  get categoryId(): bigint {
    return this.#fields()['categoryId'] as bigint;
  }

  #fields(): JsonObject {
    // Our own parser, not JSON.parse: it keeps an int64 categoryId exact.
    return parseJson(this.json) as JsonObject;
  }
}

/**
 * Serialises a Pet without a general-purpose reflection path: the field order is fixed and
 * `categoryId` is written as its exact decimal digits, which `JSON.stringify` cannot do for a bigint.
 * A stored pet already carries this text.
 */
export function petJson(pet: Pet): string {
  return pet instanceof StoredPet ? pet.json : formatPet(pet);
}

function formatPet(pet: Pet): string {
  const status = pet.status === undefined ? '' : `,"status":"${pet.status}"`;
  return `{"id":${pet.id},"name":${JSON.stringify(pet.name)},"categoryId":${pet.categoryId}${status}}`;
}

export function petsJson(pets: readonly Pet[]): string {
  // Joined, not concatenated: `+=` builds a rope that the socket write must flatten again.
  const parts = new Array<string>(pets.length);
  for (let i = 0; i < pets.length; i++) parts[i] = petJson(pets[i] as Pet);
  return `[${parts.join(',')}]`;
}
