import crypto from 'node:crypto';
import fs from 'node:fs';
import type { ModuleLogger } from '../../../core/log';
import { describe } from '../../../core/log';
import { writeFileAtomic } from '../../../core/toolkit/atomic-file';
import { GroupCommit, WriteHold } from '../../../core/toolkit/group-commit';
import { Journal } from '../../../core/toolkit/journal';

/** What a remembered id is kept as: 132 bits of its SHA-256, so every entry has the same small size. */
const digest = (id: string): string => crypto.createHash('sha256').update(id).digest('base64url').slice(0, 22);
const DIGEST = /^[A-Za-z0-9_-]{22}$/;

/**
 * The ids of MQTT API frames already run (./replay.ts), the newest `max`,
 * in memory and, given a file, on disk, so a recorded frame is refused
 * after a restart too.
 *
 * On disk: a snapshot written whole and atomically (core/toolkit/atomic-file.ts),
 * `{"held": <last journal segment it holds>, "ids": [...]}`, and a journal
 * (core/toolkit/journal.ts) each new id is appended to, fsync'd, before the
 * frame it belongs to runs (`written`): a frame that ran has its id on disk.
 * Appends are grouped (core/toolkit/group-commit.ts): the ids that arrive
 * during one append go together in the next. After `max / 2` appended ids
 * the snapshot is rewritten and the journal folded into it, so the disk
 * holds at most about 1.5 × `max` digests (22 characters each).
 */
export class SeenIds {
  private readonly seen = new Set<string>();
  private pending: string[] = [];
  private journal?: Journal;
  private sinceFold = 0;
  /** why the journal cannot be used (see load) */
  private unusable?: Error;
  private readonly commits: GroupCommit;
  readonly stats = { loaded: 0, write_errors: 0 };

  /** `holds`: the controller's (ctx.writes) */
  constructor(readonly max: number, holds: WriteHold, readonly file?: string, private readonly log?: ModuleLogger) {
    this.commits = new GroupCommit(holds, () => this.append());
  }

  get size(): number {
    return this.seen.size;
  }

  /**
   * Read the snapshot and the journal, then open a new journal segment (the
   * controller's start: synchronous). A journal that cannot be read or
   * opened leaves the store unusable: every `written` rejects, so no frame
   * runs that could run again after a restart.
   */
  load(): void {
    if (!this.file || this.journal || this.unusable) return;
    let held = 0;
    try {
      const snap = JSON.parse(fs.readFileSync(this.file, 'utf8')) as { held?: unknown; ids?: unknown };
      if (typeof snap.held === 'number' && Number.isInteger(snap.held) && snap.held >= 0) held = snap.held;
      if (Array.isArray(snap.ids)) for (const d of snap.ids) this.remember(d);
    } catch (err) {
      // a missing file is a first start; anything else loses what it held: said, not hidden
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.log?.error(`${this.file}: not read (${describe(err)}): frames it remembered may run again`);
    }
    try {
      const journal = new Journal(this.file);
      for (const entry of journal.replay(held, (segment, at) => this.log?.warning(`${segment}: a torn record at ${at} ends its replay`))) {
        if (!Array.isArray(entry)) continue;
        for (const d of entry) { this.remember(d); this.sinceFold++; }
      }
      journal.open(held);
      this.journal = journal;
    } catch (err) {
      this.unusable = err instanceof Error ? err : new Error(describe(err));
      this.log?.error(`${this.file}: journal not usable (${describe(err)}): encrypted MQTT API frames are refused until a restart finds it usable`);
    }
    this.stats.loaded = this.seen.size;
  }

  /** True the first time an id is offered (it is remembered, and on its way to disk), false for a repeat. */
  fresh(id: string): boolean {
    const d = digest(id);
    if (this.seen.has(d)) return false;
    this.remember(d);
    if (this.journal) this.pending.push(d);
    return true;
  }

  /** Resolves once every id offered so far is on disk (at once without a file); rejects when the write failed. */
  written(): Promise<void> {
    if (this.unusable) return Promise.reject(this.unusable);
    return this.journal && this.pending.length ? this.commits.request() : this.commits.settled();
  }

  /** Wait for the writes under way, then close the journal (an empty last segment is removed). */
  async close(): Promise<void> {
    await this.commits.settled();
    this.journal?.close(true);
    this.journal = undefined;
  }

  private remember(d: unknown): void {
    if (typeof d !== 'string' || !DIGEST.test(d)) return;
    this.seen.delete(d); // a repeat on disk (a fold and its journal) moves to the newest place
    this.seen.add(d);
    if (this.seen.size > this.max) this.seen.delete(this.seen.values().next().value!);
  }

  /** One group commit: the pending ids as one journal record, then a fold when the journal has grown. */
  private async append(): Promise<void> {
    const ids = this.pending;
    this.pending = [];
    const journal = this.journal;
    if (!ids.length || !journal) return;
    try {
      await journal.appendAsync(ids);
    } catch (err) {
      this.stats.write_errors++;
      throw err;
    }
    this.sinceFold += ids.length;
    if (this.sinceFold >= this.max / 2) await this.fold(journal).catch((err) => this.log?.error(`${this.file}: not written (${describe(err)}); the journal keeps the ids`));
  }

  private async fold(journal: Journal): Promise<void> {
    const upTo = journal.rotate();
    await writeFileAtomic(this.file!, JSON.stringify({ held: upTo, ids: [...this.seen] }), 0o600);
    journal.drop(upTo);
    this.sinceFold = 0;
  }
}

/** The stores of one controller, one per file: every mqtt notifier of the controller guards the same API. */
export class SeenIdsFiles {
  private readonly shared = new Map<string, { ids: SeenIds; users: number }>();

  constructor(private readonly holds: WriteHold) {}

  /** The store of `file`, loaded on first use; give it back with `release`. */
  acquire(file: string, max: number, log?: ModuleLogger): SeenIds {
    let s = this.shared.get(file);
    if (!s) {
      const ids = new SeenIds(max, this.holds, file, log);
      ids.load();
      s = { ids, users: 0 };
      this.shared.set(file, s);
    }
    s.users++;
    return s.ids;
  }

  /** The last user gone, the store is closed (its writes finished first). */
  async release(ids: SeenIds): Promise<void> {
    const s = ids.file === undefined ? undefined : this.shared.get(ids.file);
    if (!s || s.ids !== ids || --s.users > 0) return;
    this.shared.delete(ids.file!);
    await ids.close();
  }
}
