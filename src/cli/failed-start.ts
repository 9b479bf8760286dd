/** A start that failed, with what must still be said after the reason (a key generated before it failed). */
export class FailedStart extends Error {
  constructor(
    readonly reason: unknown,
    readonly epilogue: string,
  ) {
    super('the start failed', { cause: reason });
    this.name = 'FailedStart';
  }
}
