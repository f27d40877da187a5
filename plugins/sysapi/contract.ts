/** Services the sys-api plugins offer each other and core scripts. */
import type { UserDb } from './userdb';

/** The user db's tables and their values as EVA ICS 3.3 wrote them: a shared user db (plugins/cluster) keeps the same. */
export { ApikeysColumns, UsersColumns, KeyExpiresTable, KeyExpiresColumns, KEYS_SELECT, keyOfRow, rowOfKey, userOfRow, type KeyUserStore, type UserRecord } from './userdb';

/** The API call log's records, table and backends: a shared user db (plugins/cluster) keeps the log in the same table. */
export type { ApiLogBackend, ApiLogLimits } from './apilog/backend';
export { CallRing, TextFields, type Batch } from './apilog/ring';
export { ApiLogColumns, whereOf, type Query } from './apilog/table';

/** Service `cvars` (plugin sysapi-cvars). */
export interface CvarsService {
  get(name: string): string | undefined;
  all(): Record<string, string>;
  /**
   * The cvars a process environment can hold, for the programs the controller
   * runs (cmd scripts, unit scripts): a name that is empty or holds `=` or
   * NUL, or a value that holds NUL, is left out.
   */
  env(): Record<string, string>;
  /** with `rev` ([cluster] cvars = shared): only if the cvar's rev is still that (0: it does not exist), else ApiError busy */
  set(name: string, value: string, rev?: number): Promise<void>;
  delete(name: string, rev?: number): Promise<boolean>;
}

/** Service `locks` (plugin sysapi-locks): the controller's named locks. */
export interface LocksService {
  /** acquire within `timeout` seconds; auto-release after `expires` seconds; rejects ApiError busy */
  acquire(id: string, timeout?: number, expires?: number): Promise<void>;
  /** release; false when the lock is unknown */
  release(id: string): boolean;
  get(id: string): { id: string; locked: boolean; type: 'lock' } | undefined;
}

/**
 * Service `saveHooks` (plugin sysapi-system): run a change of files between
 * `[server] exec_before_save` and `exec_after_save`, one such change (or
 * save) at a time, as EVA ICS 3.3 ran save and the file functions (a
 * read-only root made writable for the change, then read-only again).
 */
export interface SaveHooksService {
  /**
   * Run the before hook, then `change`, then the after hook (even when the
   * change failed). A failing before hook stops it (10/500, nothing done); a
   * failing after hook answers 10/500 after the change was made. Without
   * hooks `change` runs at once, unqueued.
   */
  around<T>(change: () => Promise<T>): Promise<T>;
}

declare module '../../core/plugin' {
  interface Services {
    /** plugin sysapi-cvars */
    cvars: CvarsService;
    /** plugin sysapi-keys: the user database (users, dynamic keys) */
    userdb: UserDb;
    /** plugin sysapi-locks */
    locks: LocksService;
    /** plugin sysapi-system */
    saveHooks: SaveHooksService;
  }
}
