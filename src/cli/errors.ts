/** A bad flag, command or environment value: the command line exits 2 with this message. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A well-formed command that cannot be done (`keys revoke` of an unknown id): exit 1 with this message. */
export class CommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CommandError';
  }
}
