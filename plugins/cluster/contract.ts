/** The service plugin `cluster` offers: what several controllers share. */
import type { SharedUserDb } from './shared-userdb';
import type { PgLink } from './pg-link';
import type { SharedCvars } from './shared-cvars';
import type { SharedLocks } from './locks';
import type { SharedTokens } from './shared-tokens';
import type { Failover, WriteFence } from './lease';

export type { Failover, WriteFence } from './lease';

export type { SharedCvars, SharedCvar, CvarChange } from './shared-cvars';
import type { ApiLogBackend, ApiLogLimits } from '../sysapi/contract';

/**
 * The connection a database is reached through, for a plugin that keeps its
 * own things in a PostgreSQL database (the items' state db): one PgLink per
 * database, the cluster's when it is the same one (PgLink.serves).
 */
export { PgLink, isFatal, tryConnect, makeUnderLock, type LinkUser, type LinkRole } from './pg-link';
/** 3.3's PostgreSQL URI spellings, and the URI with its password masked. */
export { maskUserdb, parseUserdb } from './uri';

/** `[server] userdb`, `[cluster]`: sysapi-keys, -locks and -cvars read them too (a shared thing that did not start is never replaced by the controller's own). */
export { ClusterSettings, ClusterSection } from './settings';

/** Service `cluster`: offered only when `[server] userdb` names a shared database. */
export interface ClusterService {
  /** the connection to the shared database: what else is shared registers on it (PgLink.use) before the start ends */
  link: PgLink;
  /** dynamic keys and user accounts in the shared database (sysapi-keys, sysapi-users use it instead of their file) */
  userdb: SharedUserDb;
  /** the fleet's cvars, with `[cluster] cvars = shared` (sysapi-cvars uses them instead of the own file) */
  cvars?: SharedCvars;
  /** `[cluster] locks = shared`: the lock space of every controller of the database (sysapi-locks uses it instead of its table) */
  locks?: SharedLocks;
  /** the API call log in the shared database's table api_log (sysapi-apilog uses it instead of the own file); made at the first ask */
  apiLog(limits: ApiLogLimits): ApiLogBackend;
  /**
   * `[cluster] failover`: this controller's role and the fence a write to
   * the shared database carries (lease.ts WriteFence: how a store uses it)
   */
  failover?: Failover;
  /**
   * the fence every write to the shared database carries (WriteFence,
   * lease.ts): the lease's with failover, else one with no parameter that
   * always passes, so a store writes one way in both cases
   */
  fence: WriteFence;
  /** login tokens every controller accepts: the kernel's token store shares through it (TokenShare), nothing asks for it */
  tokens: SharedTokens;
}

declare module '../../core/plugin' {
  interface Services {
    /** plugin cluster */
    cluster: ClusterService;
  }
}
