import { petsJson } from '../../pet/codec.js';
import type { ListPage, ListQuery, ListText, PetStore } from '../../store/store.js';

/** The page as JSON text: from the store's own text when it keeps pets so, else formatted here. */
export function pageText(store: PetStore, query: ListQuery): ListText | Promise<ListText> {
  if (store.listText !== undefined) return store.listText(query);
  const page = store.list(query);
  const asText = (p: ListPage): ListText => ({ json: petsJson(p.pets), lastId: p.pets.at(-1)?.id, more: p.more });
  return page instanceof Promise ? page.then(asText) : asText(page);
}
