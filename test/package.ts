/** What the tests import from the package: its public entry point, resolved like an embedder's import. */
export * from 'petstore-api';
import type { Logger } from 'petstore-api';

export const silentLoggerForTests: Logger = { request() {}, info() {}, error() {} };
