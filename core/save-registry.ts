import { injectable } from 'tsyringe';

type Saver = () => unknown;

/**
 * Everything that `save` writes: each store registers how to write its
 * modified data. `save` (and the stop of an on_exit controller) runs them
 * all; one failing does not keep the others from writing.
 */
@injectable()
export class SaveRegistry {
  private readonly savers: { owner: string; fn: Saver }[] = [];

  add(owner: string, fn: Saver): void {
    this.savers.push({ owner, fn });
  }

  removeOwner(owner: string): void {
    for (let i = this.savers.length - 1; i >= 0; i--) if (this.savers[i].owner === owner) this.savers.splice(i, 1);
  }

  /** Run every saver; resolves with the owners whose save failed and why. */
  async saveAll(): Promise<{ owner: string; error: unknown }[]> {
    const failed: { owner: string; error: unknown }[] = [];
    for (const s of [...this.savers]) {
      try { await s.fn(); } catch (error) { failed.push({ owner: s.owner, error }); }
    }
    return failed;
  }
}
