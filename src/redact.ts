/**
 * Passwords out of text before it is shown: every message that may quote a connection string (an
 * activity's failure, a load's reason, a log line, the CLI's error) passes through here. Pure.
 */

/** A query parameter or conninfo keyword naming a password: libpq's password and sslpassword, mysql2's password1 to 3. */
const PASSWORD_KEY = /^(?:ssl)?password[1-3]?$/i;

/**
 * Text with the passwords of the URLs in it replaced, for messages: a user-info password up to the
 * authority's last `@` on its line (a password may hold an `@` or a space, as PostgreSQL's URL
 * parser reads it), a query parameter whose name, percent-decoded, is a password's, and a
 * keyword/value conninfo's `password=…` (quoted or not).
 */
export function redactUrl(text: string): string {
  const decoded = (key: string): string => {
    try {
      return decodeURIComponent(key);
    } catch {
      return key;
    }
  };
  return text
    .replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^:/?#\s@]*:)[^/?#\n]*@/gi, '$1***@')
    .replace(/([?&])([^=&#\s]+)=[^&#\s]*/g, (all, separator: string, key: string) => (PASSWORD_KEY.test(decoded(key)) ? `${separator}${key}=***` : all))
    .replace(/(\b(?:ssl)?password\s*=\s*)(?:'(?:[^'\\]|\\.)*'?|[^\s'&#]+)/gi, '$1***');
}
