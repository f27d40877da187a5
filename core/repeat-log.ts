import { Levels, type ModuleLogger } from './log';

/** Kinds of refused input one RepeatLog tells apart; more are summed up under one. */
const MAX_KINDS = 32;
/** Sources (addresses) named per kind in a summary line; the others are counted together. */
const MAX_SOURCES = 5;
const OTHER_KIND = 'other refused input';

interface Kind { count: number; sources: Map<string, number>; others: number; timer: NodeJS.Timeout }

/**
 * Bounded logging of refused input (wrong keys, malformed requests,
 * undecryptable frames): whoever can send them must not be able to grow
 * the log. The first occurrence of a kind is logged at once; the ones that
 * follow are counted, and one line per interval gives the count and the
 * sources that sent most. An interval without any ends the kind's window:
 * the next one is logged at once again.
 *
 * Memory is bounded: MAX_KINDS kinds (more are summed up as one),
 * MAX_SOURCES named sources each (the rest counted together). Nothing here
 * keeps a stopping process alive.
 */
export class RepeatLog {
  private readonly kinds = new Map<string, Kind>();

  /** `interval`: seconds, read at each window (a setting). */
  constructor(private readonly log: ModuleLogger, private readonly interval: () => number, private readonly level: number = Levels.warning) {}

  /**
   * One refused input of kind `what` (a fixed phrase: no secret, no input
   * text), from `source` (an address, a topic). `first`: the line to log
   * when it opens a window (the occurrence in full; the summaries say
   * `what`).
   */
  note(what: string, source = '', first?: string): void {
    let k = this.kinds.get(what);
    if (!k) {
      if (this.kinds.size >= MAX_KINDS && what !== OTHER_KIND) return this.note(OTHER_KIND, source);
      this.log.log(this.level, `${first ?? what}${source ? ` (from ${source})` : ''}; more are counted and logged once per ${this.seconds()} s`);
      k = { count: 0, sources: new Map(), others: 0, timer: this.arm(what) };
      this.kinds.set(what, k);
      return;
    }
    k.count++;
    if (!source) return;
    const n = k.sources.get(source);
    if (n !== undefined) k.sources.set(source, n + 1);
    else if (k.sources.size < MAX_SOURCES) k.sources.set(source, 1);
    else k.others++;
  }

  /** Log what is counted now (a window ends early: stop). */
  flush(): void {
    for (const what of [...this.kinds.keys()]) this.summary(what, true);
  }

  private seconds(): number {
    return Math.max(0.001, this.interval());
  }

  private arm(what: string): NodeJS.Timeout {
    const t = setTimeout(() => this.summary(what, false), this.seconds() * 1000);
    t.unref();
    return t;
  }

  /** End a window: one line when any came, then a new window; none came: the kind is over. */
  private summary(what: string, final: boolean): void {
    const k = this.kinds.get(what);
    if (!k) return;
    clearTimeout(k.timer);
    if (k.count === 0) {
      this.kinds.delete(what);
      return;
    }
    const named = [...k.sources].sort((a, b) => b[1] - a[1]).map(([s, n]) => `${s}: ${n}`);
    if (k.others) named.push(`others: ${k.others}`);
    this.log.log(this.level, `${what}: ${k.count} more${final ? '' : ` in the last ${this.seconds()} s`}${named.length ? ` (${named.join(', ')})` : ''}`);
    if (final) {
      this.kinds.delete(what);
      return;
    }
    k.count = 0;
    k.others = 0;
    k.sources.clear();
    k.timer = this.arm(what);
  }
}
