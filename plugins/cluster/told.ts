/**
 * What a LinkUser was told changed and has yet to read: the keys told
 * (several notices of one key coalesce into one read), read one at a time
 * in the order told, or everything read again (at each connection, past
 * `max` keys waiting). A read that fails (the server went away) hands the
 * error to `lost`: the link connects again and everything is read then.
 */
export class ToldReader {
  private readonly pending = new Set<string>();
  private all = false;
  private draining: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly max: number,
    private readonly readAll: () => Promise<void>,
    private readonly readOne: (key: string) => Promise<void>,
    private readonly lost: (err: unknown) => void,
  ) {}

  /** A key told changed; past `max` waiting, everything is read instead. */
  note(key: string): void {
    if (this.pending.size >= this.max) {
      this.all = true;
      this.pending.clear();
    } else if (!this.all) {
      this.pending.add(key);
    }
    void this.drain();
  }

  /** Everything read again; resolves once read (or failed). */
  everything(): Promise<void> {
    this.all = true;
    this.pending.clear();
    return this.drain();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.draining;
  }

  private drain(): Promise<void> {
    this.draining ??= (async () => {
      try {
        while (!this.stopped && (this.all || this.pending.size)) {
          if (this.all) {
            this.all = false;
            this.pending.clear();
            await this.readAll();
            continue;
          }
          const [first] = this.pending;
          this.pending.delete(first);
          await this.readOne(first);
        }
      } catch (err) {
        this.lost(err);
      } finally {
        this.draining = undefined;
      }
    })();
    return this.draining;
  }
}
