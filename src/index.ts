/** The public API of the package: embed the service, or start a server. */
export {
  createPetstore,
  type PetstoreService,
  type Petstore,
  type PetstoreOptions,
} from './service/create-petstore.js';
export { listen, type ListenOptions, type RunningServer } from './service/listen.js';
export type { RequestListener } from './http/app.js';
export type {
  PetStore,
  ListQuery,
  ListPage,
  ListText,
  PetText,
  StatusCounts,
  StoreStats,
  PoolStats,
  StoreObserver,
  CommitListener,
} from './store/store.js';
export {
  StoreUnavailableError,
  StoreOpenError,
  IdempotencyKeyReusedError,
  IdempotencyKeyLimitError,
  RequestInProgressError,
  type IdempotencyKey,
} from './store/store.js';
export { FileStore, type FileStoreOptions } from './store/file/file-store.js';
export type { FileSystem, StoreFile } from './lib/file-system.js';
export { petJson, petsJson } from './pet/codec.js';
export type { Pet, NewPet } from './pet/pet.js';
export { PET_STATUSES, type PetStatus } from './pet/contract.js';
export {
  jsonLogger,
  type JsonLogger,
  type Logger,
  type LogLevel,
  type LogFields,
  type RequestLogEntry,
} from './lib/logger.js';
