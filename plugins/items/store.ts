import fs from 'node:fs';
import { writeFileAtomic } from '../../core/toolkit/atomic-file';
import { GroupCommit, type WriteHold } from '../../core/toolkit/group-commit';
import { Journal } from '../../core/toolkit/journal';
import type { ModuleLogger } from '../../core/log';
import { parseOid, type Oid } from './oid';
import type { ItemProps, StoredItem } from './item';
import { WriteQueue } from './write-queue';

/**
 * runtime/<product>_items.json: `{"version": 1, "journal": <n>, "items":
 * {"<oid>": {status, value, t, ...props}}}`, with its journal
 * `<file>.journal.<n>` (core/store/journal.ts): each entry is
 * `{"<oid>": {...} | null}`, the new state of the items a write carried
 * (null: destroyed). `journal` is the last segment the file holds.
 */
const FORMAT_VERSION = 1;

/** Fold the journal into the file once it holds this many item states, or as many as there are items when more. */
const FOLD_FLOOR = 1000;

export interface LoadedItem { o: Oid; props: ItemProps; stored: StoredItem }

/** Where the file takes the items' state from when it writes. */
export interface ItemsSource {
  /** the item's state to store; undefined when it no longer exists */
  stored(oid: string): StoredItem | undefined;
  /** every item's */
  all(): Record<string, StoredItem>;
  readonly size: number;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** Check one stored entry; undefined when it cannot be used. */
function readEntry(oid: string, entry: unknown): LoadedItem | undefined {
  if (!entry || typeof entry !== 'object') return undefined;
  const raw = entry as Record<string, unknown>;
  const o = parseOid(oid);
  if (typeof raw.status !== 'number' || !Number.isInteger(raw.status)) return undefined;
  if (raw.value !== null && typeof raw.value !== 'string') return undefined;
  const props: ItemProps = {
    mqtt_update: str(raw.mqtt_update),
    mqtt_control: str(raw.mqtt_control),
    action_enabled: raw.action_enabled !== false,
    action_timeout: typeof raw.action_timeout === 'number' && raw.action_timeout > 0 ? raw.action_timeout : null,
  };
  const t = typeof raw.t === 'number' && Number.isFinite(raw.t) ? raw.t : Date.now() / 1000;
  return { o, props, stored: { ...props, status: raw.status, value: raw.value, t } };
}

/** How much one journal write (one append, one fsync) carries at most. */
export interface WriteBounds {
  /** item states */
  states: number;
  /** bytes of the record's JSON; a single state larger than this still goes, alone */
  bytes: number;
}

/** Figures for GET /metrics. */
export interface ItemsFileStats {
  /** journal appends (each one fsync) */
  appends: number;
  /** item states those appends carried */
  states: number;
  /** whole-file writes (folds) */
  folds: number;
  /** items changed in memory and not yet on their way to disk */
  pending: number;
}

/**
 * Reads and writes the items file. A change is made durable by appending
 * the changed items to the journal (`store`): its cost does not grow with the
 * number of items. The file itself is rewritten whole (`fold`: atomic, then
 * the journal it holds is dropped) when the journal holds more item states
 * than FOLD_FLOOR or the number of items, on `save`, and at stop.
 *
 * Group commit: one write at a time (core/toolkit/group-commit.ts). Changed
 * items wait in `pending`, in the order they changed; a write takes them
 * from the front, up to its bounds (WriteBounds), and appends their states
 * as they are at that moment in one record with one fsync; what changed
 * meanwhile, or did not fit, waits for the next write, which follows at
 * once. Whatever arrives together (the calls of a JSON RPC batch, which
 * holds the write back until its last call ran, and concurrent callers)
 * therefore shares one append and one fsync. A caller waits for the
 * write that carries its item (`store`), and a failed write rejects exactly
 * its own callers; its items go back to `pending`, carried by a later write.
 */
export class ItemsFile {
  private readonly journal: Journal;
  private readonly commits: GroupCommit;
  /** items changed in memory and not yet taken by a write, and those the write under way carries, with their callers */
  private readonly queue = new WriteQueue();
  /** a write was asked for what is pending (after a failure: not until the next change asks again) */
  private wanted = false;
  /** the next write rewrites the file */
  private whole = false;
  /** the last journal segment the file holds */
  private held = 0;
  /** item states in the journal, not yet folded into the file */
  private records = 0;
  /** after a failed fold: the journal grows this much longer before the next try (the changes still go to it) */
  private foldDelay = 0;
  /** the last write asked for whose failure nobody else handles (its rejection handled once) */
  private unwaited?: Promise<void>;
  private readonly figures = { appends: 0, states: 0, folds: 0 };

  /** `holds`: the controller's (ctx.writes) */
  constructor(readonly path: string, private readonly log: ModuleLogger, holds: WriteHold, private readonly source: ItemsSource, private readonly bounds: WriteBounds) {
    this.journal = new Journal(path);
    // a write hold does not keep back a write with a full write's worth of states waiting
    this.commits = new GroupCommit(holds, () => this.commit(), () => this.queue.pending.size >= this.bounds.states);
  }

  /**
   * Load every usable item: the file, then the journal's changes after it.
   * A file that does not parse is moved aside with its journal (kept for the
   * operator, never overwritten) and the controller starts without items; a
   * bad entry is skipped with a warning.
   */
  load(): LoadedItem[] {
    const items = this.readFile();
    if (items) {
      for (const entry of this.journal.replay(this.held, (segment, at) => this.log.warning(`${segment}: a torn record at byte ${at} (a write cut short before it was acknowledged) ends its replay`))) {
        if (!entry || typeof entry !== 'object' || Array.isArray(entry)) continue;
        for (const [oid, state] of Object.entries(entry as Record<string, unknown>)) {
          if (state === null) delete items[oid];
          else items[oid] = state;
          this.records++;
        }
      }
    }
    const out: LoadedItem[] = [];
    for (const [oid, raw] of Object.entries(items ?? {})) {
      let entry: LoadedItem | undefined;
      try { entry = readEntry(oid, raw); } catch { entry = undefined; }
      if (entry) out.push(entry);
      else this.log.warning(`${this.path}: item ${oid} is malformed, skipped`);
    }
    return out;
  }

  /** The item changed in memory (or was destroyed): a write carries it. */
  mark(oid: string): void {
    this.queue.mark(oid);
  }

  /** Something changed in memory that is not on disk yet. */
  get dirty(): boolean {
    return this.queue.pending.size > 0 || this.whole;
  }

  /**
   * Make the item's state as it is now durable: resolves once a write
   * carried it, rejects when that write failed; undefined when it is on
   * disk already (nothing of it waits to be written).
   */
  store(oid: string): Promise<void> | undefined {
    const w = this.queue.waitFor(oid);
    if (w?.pending) this.request();
    return w?.promise;
  }

  /** `store` of everything changed, for a caller that does not wait: a failure is logged by the write, and the next one carries the change. */
  storeSoon(): void {
    this.request();
  }

  /** Rewrite the file whole with the state in memory, then drop the journal (save, on_exit, stop). */
  fold(): Promise<void> {
    this.whole = true;
    const write = this.commits.request();
    this.unwaited = write;
    return write;
  }

  /** Wait for every write asked for so far, and the writes they lead to. */
  async flush(): Promise<void> {
    let last: Promise<void>;
    do {
      last = this.commits.last();
      await this.commits.settled();
    } while (last !== this.commits.last());
  }

  /** Journal item states not yet folded: a stop under db_update instant folds them, leaving one whole file. */
  get journaled(): number {
    return this.records;
  }

  stats(): ItemsFileStats {
    return { ...this.figures, pending: this.queue.pending.size };
  }

  /** At stop, after the last write: close the journal (an empty segment is removed). */
  close(): void {
    this.journal.close(true);
  }

  /** The `items` of the file, or {} without one; undefined when it is unreadable (moved aside with its journal). */
  private readFile(): Record<string, unknown> | undefined {
    if (!fs.existsSync(this.path)) return {};
    try {
      const doc = JSON.parse(fs.readFileSync(this.path, 'utf8')) as { items?: unknown; journal?: unknown } | null;
      if (!doc || typeof doc !== 'object' || typeof doc.items !== 'object' || doc.items === null) throw new Error('no "items" object');
      if (Number.isSafeInteger(doc.journal) && (doc.journal as number) > 0) this.held = doc.journal as number;
      return doc.items as Record<string, unknown>;
    } catch (err) {
      const aside = `${this.path}.corrupt-${Date.now()}`;
      fs.renameSync(this.path, aside);
      // the journal's changes belong to that file: kept beside it, not replayed over nothing
      for (const s of this.journal.segments()) fs.renameSync(s.name, `${aside}.journal.${s.seq}`);
      this.log.error(`${this.path} is unreadable (${(err as Error).message}): moved to ${aside}, starting without items`);
      return undefined;
    }
  }

  /** A write is wanted for what is pending. */
  private request(): void {
    this.wanted = true;
    this.write();
  }

  /** Have the next write run (joining it when it has not started); its failure reaches the callers through their items. */
  private write(): void {
    const write = this.commits.request();
    if (write === this.unwaited) return; // joined a write already handled
    this.unwaited = write;
    write.catch(() => {});
  }

  /** One write: pending items appended to the journal up to the bounds, or the whole file when asked or when the journal is long. */
  private async commit(): Promise<void> {
    const whole = this.whole
      || this.records + Math.min(this.queue.pending.size, this.bounds.states) > Math.max(FOLD_FLOOR, this.source.size) + this.foldDelay;
    this.whole = false;
    if (!whole && this.queue.pending.size === 0) return;
    // taken first: whatever fails below, the callers of what was taken are told, and the write after takes others
    const json = whole ? this.takeAll() : this.take(this.bounds.states, this.bounds.bytes);
    let failure: Error | undefined;
    try {
      if (!this.journal.isOpen) this.journal.open(this.held);
      if (whole) await this.writeWhole();
      else await this.append(json);
    } catch (err) {
      failure = err as Error;
      if (whole) this.foldDelay = this.records;
      this.log.error(`cannot write ${this.path}: ${failure.message}`);
    }
    for (const [oid, w] of this.queue.carried()) {
      if (failure === undefined) {
        w?.resolve();
        continue;
      }
      // carried by a later write, behind what already waits (so that the callers waiting are served first)
      this.mark(oid);
      w?.reject(failure);
    }
    if (failure !== undefined) this.wanted = false; // not again at once: a full disk stays full
    // the rest: what did not fit, and what changed meanwhile
    if (this.queue.waiters > 0 || (this.wanted && this.queue.pending.size > 0)) this.write();
    if (failure !== undefined) throw failure;
  }

  /** Move the first pending items into `carrying`, up to `states` of them and `bytes` of JSON (always at least one); returns their entry as JSON. */
  private take(states: number, bytes: number): string {
    const parts: string[] = [];
    let size = 2; // the braces
    for (const oid of this.queue.pending.keys()) {
      const part = `${JSON.stringify(oid)}:${JSON.stringify(this.source.stored(oid) ?? null)}`;
      const partSize = Buffer.byteLength(part) + (parts.length ? 1 : 0);
      if (parts.length && (parts.length >= states || size + partSize > bytes)) break;
      parts.push(part);
      size += partSize;
      this.queue.take(oid);
    }
    return `{${parts.join(',')}}`;
  }

  /** Every pending item, for a fold (the file is written from the state in memory). */
  private takeAll(): string {
    this.queue.takeAll();
    return '';
  }

  private async append(json: string): Promise<void> {
    await this.journal.appendJsonAsync(json);
    this.records += this.queue.carrying.size;
    this.figures.appends++;
    this.figures.states += this.queue.carrying.size;
  }

  private async writeWhole(): Promise<void> {
    // rotation and snapshot in one synchronous step: changes stored later go to the new segment
    const upTo = this.journal.rotate();
    const text = JSON.stringify({ version: FORMAT_VERSION, journal: upTo, items: this.source.all() }, null, 1) + '\n';
    await writeFileAtomic(this.path, text);
    this.held = upTo;
    this.journal.drop(upTo);
    this.records = 0;
    this.foldDelay = 0;
    this.figures.folds++;
  }
}
