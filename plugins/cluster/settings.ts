import { choice, text } from '../../core/schema';

/** `[server]` settings of plugin cluster (sysapi-keys reads them too: a shared db that did not start is not replaced by the file). */
export const ClusterSettings = {
  userdb: text('', 'a PostgreSQL database several controllers share for dynamic API keys and users: postgresql://user:password@host:port/database (EVA ICS 3.3.2\'s tables); empty: this controller\'s own runtime/db file'),
};

/** `[cluster]` settings of plugin cluster: what else the controllers of the shared database share (each opt-in). */
export const ClusterLockSettings = {
  locks: choice('local', ['local', 'shared'], 'shared: lock, unlock, get_lock are one lock space across the controllers of [server] userdb, every grant with a fencing token; local: this controller\'s own locks'),
};
