/** The public API of the package: embed the service, or start a server. */
export { createPetstore, type Petstore, type PetstoreOptions } from './petstore.js';
export { listen, type ListenOptions, type RunningServer } from './listen.js';
export type { RequestListener } from './app.js';
export type { PetStore, ListQuery, ListPage } from './store/store.js';
export { StoreUnavailableError, StoreOpenError } from './store/store.js';
export { FileStore, type FileStoreOptions } from './store/file-store.js';
export type { FileSystem, StoreFile } from './store/file-system.js';
export type { Pet, NewPet } from './pet.js';
export { PET_STATUSES, type PetStatus } from './contract.js';
export { jsonLogger, type Logger, type LogLevel, type LogFields, type RequestLogEntry } from './logger.js';
