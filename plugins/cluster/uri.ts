/**
 * `[server] userdb`: the database several controllers share, as EVA ICS 3.3
 * wrote it (SQLAlchemy URIs): `postgresql://user:pass@host:port/db`, also
 * `postgres://` and `postgresql+psycopg2://`. Anything else is refused with
 * its file:line (exit 3): a fleet that silently fell back to each
 * controller's own file would no longer share its keys.
 */

/** The URI with its password replaced, for logs, /health and errors. */
export function maskUserdb(uri: string): string {
  return uri.replace(/^([^:]+:\/\/[^:/@]*):[^@]*@/, '$1:***@');
}

/** The connection string for the `pg` driver, or why `uri` is no PostgreSQL database URI (without the password). */
export function parseUserdb(uri: string): { connectionString: string } | { error: string } {
  const m = /^(postgresql|postgres)(\+psycopg2)?:\/\//i.exec(uri);
  const shape = 'postgresql://user:password@host:port/database';
  if (!m) return { error: `${maskUserdb(uri)}: not a PostgreSQL URI (${shape}; SQLite user dbs are the controller's own file)` };
  const connectionString = `postgresql://${uri.slice(m[0].length)}`;
  let u: URL;
  try {
    u = new URL(connectionString);
  } catch {
    return { error: `${maskUserdb(uri)}: not a valid URI (${shape})` };
  }
  if (!u.hostname) return { error: `${maskUserdb(uri)}: no host (${shape})` };
  if (u.pathname.length < 2 || u.pathname.slice(1).includes('/')) return { error: `${maskUserdb(uri)}: no database name (${shape})` };
  if (u.port && !(Number(u.port) >= 1 && Number(u.port) <= 65535)) return { error: `${maskUserdb(uri)}: bad port (${shape})` };
  return { connectionString };
}
