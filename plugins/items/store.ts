import fs from 'node:fs';
import { writeFileAtomic } from '../../core/store/atomic';
import { GroupCommit } from '../../core/store/group-commit';
import { Journal } from '../../core/store/journal';
import type { ModuleLogger } from '../../core/log';
import { parseOid, type Oid } from './oid';
import type { ItemProps, StoredItem } from './item';

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

/**
 * Reads and writes the items file. A change is made durable by appending
 * the changed items to the journal (`store`): its cost does not grow with the
 * number of items. The file itself is rewritten whole (`fold`: atomic, then
 * the journal it holds is dropped) when the journal holds more item states
 * than FOLD_FLOOR or the number of items, on `save`, and at stop. Writes are
 * one at a time, grouped: the changes made while one is under way go
 * together in the next (core/store/group-commit.ts).
 */
export class ItemsFile {
  private readonly journal: Journal;
  private readonly commits = new GroupCommit(() => this.commit());
  /** items changed in memory and not yet on disk */
  private pending = new Set<string>();
  /** the next write rewrites the file */
  private whole = false;
  /** the last journal segment the file holds */
  private held = 0;
  /** item states in the journal, not yet folded into the file */
  private records = 0;
  /** after a failed fold: the journal grows this much longer before the next try (the changes still go to it) */
  private foldDelay = 0;
  /** the last write storeSoon joined (its rejection handled once) */
  private unwaited?: Promise<void>;

  constructor(readonly path: string, private readonly log: ModuleLogger, private readonly source: ItemsSource) {
    this.journal = new Journal(path);
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

  /** The item changed in memory (or was destroyed): the next write carries it. */
  mark(oid: string): void {
    this.pending.add(oid);
  }

  /** Something changed in memory that is not on disk yet. */
  get dirty(): boolean {
    return this.pending.size > 0 || this.whole;
  }

  /** Make every change marked so far durable (in the journal, or a fold when it is long); resolves once on disk. */
  store(): Promise<void> {
    return this.commits.request();
  }

  /** `store` for a caller that does not wait: a failure is logged by the write, and the next one carries the change. */
  storeSoon(): void {
    const write = this.commits.request();
    if (write === this.unwaited) return; // joined a write already handled
    this.unwaited = write;
    write.catch(() => {});
  }

  /** Rewrite the file whole with the state in memory, then drop the journal (save, on_exit, stop). */
  fold(): Promise<void> {
    this.whole = true;
    return this.commits.request();
  }

  /** Wait for every write asked for so far. */
  flush(): Promise<void> {
    return this.commits.settled();
  }

  /** The newest write asked for: resolves once it is on disk, rejects when it failed. */
  written(): Promise<void> {
    return this.commits.last();
  }

  /** Journal item states not yet folded: a stop under db_update instant folds them, leaving one whole file. */
  get journaled(): number {
    return this.records;
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

  /** One write: the marked items appended to the journal, or the whole file when asked or when the journal is long. */
  private async commit(): Promise<void> {
    const oids = this.pending;
    const whole = this.whole || this.records + oids.size > Math.max(FOLD_FLOOR, this.source.size) + this.foldDelay;
    this.pending = new Set();
    this.whole = false;
    try {
      if (!this.journal.isOpen) this.journal.open(this.held);
      if (whole) await this.writeWhole();
      else if (oids.size) await this.append(oids);
    } catch (err) {
      // the changes are carried by the next write; a fold is not tried again at once (its caller is told now)
      for (const oid of oids) this.pending.add(oid);
      if (whole) this.foldDelay = this.records;
      this.log.error(`cannot write ${this.path}: ${(err as Error).message}`);
      throw err;
    }
  }

  private async append(oids: Set<string>): Promise<void> {
    const entry: Record<string, StoredItem | null> = {};
    for (const oid of oids) entry[oid] = this.source.stored(oid) ?? null;
    await this.journal.appendAsync(entry);
    this.records += oids.size;
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
  }
}
