/** Services the sys-api plugins offer each other and core scripts. Types only. */

/** Service `cvars` (plugin sysapi-cvars). */
export interface CvarsService {
  get(name: string): string | undefined;
  all(): Record<string, string>;
  set(name: string, value: string): Promise<void>;
  delete(name: string): Promise<boolean>;
}

/** Service `locks` (plugin sysapi-locks): the controller's named locks. */
export interface LocksService {
  /** acquire within `timeout` seconds; auto-release after `expires` seconds; rejects ApiError busy */
  acquire(id: string, timeout?: number, expires?: number): Promise<void>;
  /** release; false when the lock is unknown */
  release(id: string): boolean;
  get(id: string): { id: string; locked: boolean; type: 'value' } | undefined;
}
