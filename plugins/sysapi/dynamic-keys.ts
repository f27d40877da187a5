import type { ModuleLogger } from '../../core/log';
import { describe } from '../../core/log';
import { ApiError, functionFailed } from '../../core/errors';
import type { KeyStore } from '../../core/auth/keys';
import type { KeyUserStore } from './userdb';

/**
 * Make the user db's rows follow memory (`sync`) and write it now; a failure
 * is logged and answered 10 / 500. The change stays in memory, unless the
 * caller gives `undo`: then it is taken back before any later write (a
 * creation that answers an error leaves no trace).
 */
export async function writeOrFail(db: KeyUserStore, log: ModuleLogger, sync: () => void, undo?: () => void): Promise<void> {
  try {
    await db.change(sync, undo);
  } catch (err) {
    log.error(`user db ${db.file} could not be written: ${describe(err)}`);
    if (err instanceof ApiError) throw err; // the store said why in the caller's words
    throw functionFailed(`the user db could not be written${undo ? ', nothing changed' : ''}; see the controller log`);
  }
}

/**
 * When dynamic key changes reach the user db. `instant`: every change is on
 * disk before the call answers. `manual` and `on_exit`: changed keys are
 * remembered and written by `save` (and at stop for on_exit), or at once when
 * the call asks for it (`save` parameter).
 */
export class DynamicKeysSync {
  private readonly dirty = new Set<string>();

  constructor(
    private readonly db: KeyUserStore,
    private readonly keys: KeyStore,
    private readonly instant: () => boolean,
    private readonly log: ModuleLogger,
  ) {}

  /**
   * Key `id` was created, changed or destroyed. `undo` takes the change back
   * out of the key store when its write fails (its row follows).
   */
  async changed(id: string, saveNow = false, undo?: () => void): Promise<void> {
    if (!this.instant() && !saveNow) {
      this.dirty.add(id);
      return;
    }
    await this.write([id], undo);
  }

  /** Whether key `id` has changes not yet written. */
  pending(id: string): boolean {
    return this.dirty.has(id);
  }

  /** Write every remembered change (save, stop). */
  async saveAll(): Promise<void> {
    if (this.dirty.size) await this.write([...this.dirty]);
  }

  private async write(ids: string[], undo?: () => void): Promise<void> {
    // the marks go when the rows are put: a user db that could not be opened keeps them for the next save
    await writeOrFail(this.db, this.log, () => {
      for (const id of ids) {
        this.putRow(id);
        this.dirty.delete(id);
      }
    }, undo);
  }

  /** Make the row of key `id` what the key store holds. */
  private putRow(id: string): void {
    const key = this.keys.get(id);
    if (key?.dynamic) this.db.putKey(key);
    else this.db.deleteKey(id);
  }
}
