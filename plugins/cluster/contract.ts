/** The service plugin `cluster` offers: what several controllers share. */
import type { SharedUserDb } from './shared-userdb';
import type { PgLink } from './pg-link';
import type { SharedTokens } from './shared-tokens';

/** `[server] userdb`: sysapi-keys reads it too (a shared user db that did not start is never replaced by the own file). */
export { ClusterSettings } from './settings';

/** Service `cluster`: offered only when `[server] userdb` names a shared database. */
export interface ClusterService {
  /** the connection to the shared database: what else is shared registers on it (PgLink.use) before the start ends */
  link: PgLink;
  /** dynamic keys and user accounts in the shared database (sysapi-keys, sysapi-users use it instead of their file) */
  userdb: SharedUserDb;
  /** login tokens every controller accepts: the kernel's token store shares through it (TokenShare), nothing asks for it */
  tokens: SharedTokens;
}

declare module '../../core/plugin' {
  interface Services {
    /** plugin cluster */
    cluster: ClusterService;
  }
}
