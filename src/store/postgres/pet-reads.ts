import type { Sql } from 'postgres';
import { petsJson } from '../../pet/codec.js';
import type { Pet } from '../../pet/pet.js';
import type { ListPage, ListQuery, ListText } from '../store.js';
import { toPet, type PetRow } from './pet-row.js';

/** A page as the database answers it (`--database-reads`, and while the copy is being filled). */
export async function readPage(sql: Sql, query: ListQuery): Promise<ListPage> {
  const limit = query.limit + 1;
  const rows =
    query.status === undefined
      ? await sql<PetRow[]>`SELECT id::text, name_json, category_id::text, status FROM petstore.pets
          WHERE id > ${query.after} ORDER BY pets.id LIMIT ${limit}`
      : await sql<PetRow[]>`SELECT id::text, name_json, category_id::text, status FROM petstore.pets
          WHERE status = ${query.status} AND id > ${query.after} ORDER BY pets.id LIMIT ${limit}`;
  return { pets: rows.slice(0, query.limit).map(toPet), more: rows.length > query.limit };
}

export async function readPet(sql: Sql, id: number): Promise<Pet | undefined> {
  const [row] = await sql<
    PetRow[]
  >`SELECT id::text, name_json, category_id::text, status FROM petstore.pets WHERE id = ${id}`;
  return row === undefined ? undefined : toPet(row);
}

/** The page as text, as the HTTP layer would have made it. */
export function pageText({ pets, more }: ListPage): ListText {
  return { json: petsJson(pets), lastId: pets.at(-1)?.id, more };
}

/** The highest id handed out by any instance. */
export async function readHighestId(sql: Sql): Promise<number> {
  return Number((await sql<[{ id: string }]>`SELECT last_id::text AS id FROM petstore.pet_ids`)[0]?.id ?? 0);
}
