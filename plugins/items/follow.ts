/** Names waiting to be read while a read is under way; past it everything is read. */
const FOLLOW_MAX = 10_000;

/**
 * What a standby reads of a table the active one writes (item states, item
 * definitions): the names told, or everything, one read at a time, so a
 * later read never lands before an earlier one. Names told while a read is
 * under way go in the next one (bounded: past FOLLOW_MAX, everything); a
 * read that fails keeps what it wanted for the next.
 */
export class Follower {
  private toFollow: Set<string> | 'all' | undefined;
  private following: Promise<void> | undefined;

  constructor(private readonly read: (want: Set<string> | 'all') => Promise<void>) {}

  /** Read these names (or everything); resolves once a read that covers them ended. */
  follow(names: Iterable<string> | 'all'): Promise<void> {
    if (names === 'all' || this.toFollow === 'all') this.toFollow = 'all';
    else {
      const want = this.toFollow ?? new Set<string>();
      this.toFollow = want;
      for (const n of names) want.add(n);
      if (want.size > FOLLOW_MAX) this.toFollow = 'all';
    }
    return this.following ??= (async () => {
      try {
        while (this.toFollow) {
          const want = this.toFollow;
          this.toFollow = undefined;
          try {
            await this.read(want);
          } catch (err) {
            this.toFollow = want === 'all' || this.toFollow === 'all' ? 'all' : new Set([...want, ...(this.toFollow ?? [])]);
            throw err;
          }
        }
      } finally {
        this.following = undefined;
      }
    })();
  }
}
