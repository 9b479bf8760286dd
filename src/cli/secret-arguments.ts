/**
 * A password in a command-line argument is one every user of the machine can read (`ps`,
 * /proc/<pid>/cmdline), as API keys are kept off the command line for. A database URL given with
 * --database-url is checked for one at start, and a warning says where it belongs instead.
 */

/** Whether `url` carries a password, in its user part or as postgres' `password` query parameter. */
export function carriesPassword(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (error) {
    // Not a URL at all: the database client refuses it with its own message.
    if (error instanceof TypeError) return false;
    throw error;
  }
  return parsed.password !== '' || parsed.searchParams.has('password');
}

/** The warning for a --database-url with a password, undefined for any other (or none). */
export function databaseUrlWarning(flag: string | undefined): string | undefined {
  if (flag === undefined || !carriesPassword(flag)) return undefined;
  return (
    'the database password is on the command line (--database-url), where ps shows it to every user of this machine; ' +
    'give the URL in PETSTORE_DATABASE_URL instead, or leave the password out of the URL and set PGPASSWORD'
  );
}
