import { parseJson, JsonSyntaxError, type JsonValue } from '../json.js';
import { petJson, type Pet } from '../pet.js';
import { validateCategoryId, validateName, validateStatus, ValidationError } from '../validate.js';
import { StoreOpenError } from './store.js';

/**
 * The files of a data directory, all readable JSON:
 * - `pets.json`, the snapshot: `{"format":"petstore-pets/1","pets":[` then one Pet per line `]}`;
 * - `pets-journal.<n>.jsonl`, journals: one Pet per line, appended by each commit after the snapshot.
 * A pet's line is exactly what the API returns for it, with int64 `categoryId` digits kept exactly.
 */
export const SNAPSHOT_FILE = 'pets.json';
export const SNAPSHOT_FORMAT = 'petstore-pets/1';
const JOURNAL_NAME = /^pets-journal\.([0-9]{1,15})\.jsonl$/;
const TEMP_NAME = /^\.pets\.json\.[0-9a-f]+\.tmp$/;

export const journalFile = (generation: number): string => `pets-journal.${generation}.jsonl`;
export const tempSnapshotFile = (suffix: string): string => `.pets.json.${suffix}.tmp`;
export const isTempFile = (name: string): boolean => TEMP_NAME.test(name);

export function journalGeneration(name: string): number | undefined {
  const match = JOURNAL_NAME.exec(name);
  return match === null ? undefined : Number(match[1]);
}

const PETS_PER_CHUNK = 4096;

/** The snapshot text of `pets[0..count)`, in chunks so that writing a large one never blocks for long. */
export function* snapshotChunks(pets: readonly Pet[], count: number): Generator<string> {
  yield `{"format":"${SNAPSHOT_FORMAT}","pets":[\n`;
  for (let start = 0; start < count; start += PETS_PER_CHUNK) {
    const end = Math.min(start + PETS_PER_CHUNK, count);
    let chunk = '';
    for (let i = start; i < end; i++) {
      chunk += petJson(pets[i] as Pet);
      chunk += i + 1 < count ? ',\n' : '\n';
    }
    yield chunk;
  }
  yield ']}\n';
}

export function journalLines(pets: readonly Pet[]): string {
  let text = '';
  for (const pet of pets) text += petJson(pet) + '\n';
  return text;
}

/** Parses and checks a whole snapshot; anything unexpected is a StoreOpenError naming the file. */
export function parseSnapshot(text: string, file: string): Pet[] {
  let document: JsonValue;
  try {
    document = parseJson(text);
  } catch (error) {
    if (error instanceof JsonSyntaxError) throw new StoreOpenError(`${file} is not valid JSON: ${error.message}`, { cause: error });
    throw error;
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document) || document['format'] !== SNAPSHOT_FORMAT) {
    throw new StoreOpenError(`${file} is not a pet store snapshot (expected "format": "${SNAPSHOT_FORMAT}")`);
  }
  const list = document['pets'];
  if (!Array.isArray(list)) throw new StoreOpenError(`${file} has no "pets" array`);
  const pets: Pet[] = [];
  let lastId = 0;
  for (let i = 0; i < list.length; i++) {
    const pet = toPet(list[i] as JsonValue, () => `${file}, pet #${i + 1}`);
    if (pet.id <= lastId) throw new StoreOpenError(`${file}, pet #${i + 1}: id ${pet.id} is not above the previous id ${lastId}`);
    lastId = pet.id;
    pets.push(pet);
  }
  return pets;
}

export interface JournalContents {
  pets: Pet[];
  /** Bytes of complete lines; a torn last line (a crash mid-append, never acknowledged) lies beyond. */
  completeLength: number;
}

/** Parses a journal. Only an unterminated final line is forgiven: it is a write that was never acknowledged. */
export function parseJournal(bytes: Buffer, file: string): JournalContents {
  const end = bytes.lastIndexOf(0x0a) + 1;
  const text = decodeUtf8(bytes.subarray(0, end), file);
  const pets: Pet[] = [];
  let lineStart = 0;
  let lineNumber = 0;
  while (lineStart < text.length) {
    const lineEnd = text.indexOf('\n', lineStart);
    lineNumber++;
    const line = text.slice(lineStart, lineEnd);
    lineStart = lineEnd + 1;
    const where = (): string => `${file}, line ${lineNumber}`;
    let value: JsonValue;
    try {
      value = parseJson(line);
    } catch (error) {
      if (error instanceof JsonSyntaxError) throw new StoreOpenError(`${where()} is not valid JSON: ${error.message}`, { cause: error });
      throw error;
    }
    pets.push(toPet(value, where));
  }
  return { pets, completeLength: end };
}

export function decodeUtf8(bytes: Uint8Array, file: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch (error) {
    if (error instanceof TypeError) throw new StoreOpenError(`${file} is not valid UTF-8`, { cause: error });
    throw error;
  }
}

function toPet(value: JsonValue, where: () => string): Pet {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new StoreOpenError(`${where()}: not a JSON object`);
  try {
    for (const key of Object.keys(value)) {
      if (key !== 'id' && key !== 'name' && key !== 'categoryId' && key !== 'status') throw new ValidationError(`unknown field "${key}"`);
    }
    const id = value['id'];
    if (typeof id !== 'bigint' || id < 1n || id > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new ValidationError('field "id" must be a positive integer');
    }
    const name = validateName(value['name']);
    const categoryId = validateCategoryId(value['categoryId']);
    const status = value['status'];
    return status === undefined
      ? { id: Number(id), name, categoryId }
      : { id: Number(id), name, categoryId, status: validateStatus(status, 'field "status"') };
  } catch (error) {
    if (error instanceof ValidationError) throw new StoreOpenError(`${where()}: ${error.message}`, { cause: error });
    throw error;
  }
}
