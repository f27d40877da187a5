import { seconds, text } from '../../core/schema';

/** `[server]` settings of plugin cluster (sysapi-keys reads them too: a shared db that did not start is not replaced by the file). */
export const ClusterSettings = {
  userdb: text('', 'a PostgreSQL database several controllers share for dynamic API keys and users: postgresql://user:password@host:port/database (EVA ICS 3.3.2\'s tables); empty: this controller\'s own runtime/db file'),
};

/** `[cluster]` settings of plugin cluster (with `[server] userdb` only). */
export const ClusterSection = {
  token_cache: seconds(60, 'with [server] userdb: how long tokens held in memory keep working while the shared database is unreachable; past it they are refused until it is back', 1),
};
