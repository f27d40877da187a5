/** The service plugin `cluster` offers: what several controllers share. */
import type { SharedUserDb } from './shared-userdb';
import type { PgLink } from './pg-link';
import type { SharedLocks } from './locks';

/** `[server] userdb`: sysapi-keys reads it too (a shared user db that did not start is never replaced by the own file). */
export { ClusterSettings } from './settings';
/** `[cluster] locks`: sysapi-locks reads it too (a shared lock space that did not start is never replaced by its own table). */
export { ClusterLockSettings } from './settings';

/** Service `cluster`: offered only when `[server] userdb` names a shared database. */
export interface ClusterService {
  /** the connection to the shared database: what else is shared registers on it (PgLink.use) before the start ends */
  link: PgLink;
  /** dynamic keys and user accounts in the shared database (sysapi-keys, sysapi-users use it instead of their file) */
  userdb: SharedUserDb;
  /** `[cluster] locks = shared`: the lock space of every controller of the database (sysapi-locks uses it instead of its table) */
  locks?: SharedLocks;
}

declare module '../../core/plugin' {
  interface Services {
    /** plugin cluster */
    cluster: ClusterService;
  }
}
