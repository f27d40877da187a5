/** The service plugin `cluster` offers: what several controllers share. Types only. */
import type { SharedUserDb } from './shared-userdb';

/** Service `cluster`: offered only when `[server] userdb` names a shared database. */
export interface ClusterService {
  /** dynamic keys and user accounts in the shared database (sysapi-keys, sysapi-users use it instead of their file) */
  userdb: SharedUserDb;
}

declare module '../../core/plugin' {
  interface Services {
    /** plugin cluster */
    cluster: ClusterService;
  }
}
