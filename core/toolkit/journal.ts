import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';

const write = promisify(fs.write);
const fdatasync = promisify(fs.fdatasync);
const fsync = promisify(fs.fsync);
const open = promisify(fs.open);
const close = promisify(fs.close);

/**
 * The journal of a store whose file is rewritten whole (a sql.js history,
 * the items file): every change is appended to a segment file beside the
 * store's file and fsync'd before it counts as stored, so a crash loses
 * nothing stored although the file itself is rewritten (folded, or
 * checkpointed) only now and then.
 *
 * Segments are `<file>.journal.<n>` (never `<file>-journal`: that name is
 * SQLite's own rollback journal, and a reader would take ours for a hot one).
 * A fold starts a new segment, writes the file, then deletes the older
 * segments: a crash at any point leaves a change in the file, in a segment,
 * or in both. The file records the last segment it holds (each store says
 * where), so a segment the crash left behind although the file holds it is
 * skipped at replay: an older state never overwrites a later one the file has.
 *
 * A record is: length (u32 LE), CRC-32 of the payload (u32 LE), payload (an
 * entry as JSON). A torn record at the end of a segment (a crash in the
 * middle of an append that was never acknowledged) fails its length or CRC
 * check and ends the replay of that segment.
 *
 * A store may also open its new segment before it replays the older ones
 * (`unheld`, `entries`), append to it meanwhile and read it back (`since`):
 * the sql.js history takes rows while it replays at start.
 *
 * One caller at a time: appends, rotations and drops are never concurrent
 * (the history runs in its own thread; the items file serialises them through
 * a group commit).
 */
const HEADER = 8;

export class Journal {
  private fd: number | undefined;
  private seq = 0;
  /** end of the last whole record in the current segment */
  private offset = 0;
  /** bytes of every segment not yet folded into the file */
  bytes = 0;
  /** bytes appended since the process started (figures) */
  written = 0;

  constructor(readonly file: string) {}

  /** Segments of this file that exist, oldest first. */
  segments(): { seq: number; name: string }[] {
    const dir = path.dirname(this.file);
    const prefix = `${path.basename(this.file)}.journal.`;
    let names: string[];
    try { names = fs.readdirSync(dir); } catch { return []; }
    return names
      .filter((n) => n.startsWith(prefix) && /^\d+$/.test(n.slice(prefix.length)))
      .map((n) => ({ seq: Number(n.slice(prefix.length)), name: path.join(dir, n) }))
      .sort((a, b) => a.seq - b.seq);
  }

  /**
   * Every entry of every segment after `held` (the last one the file holds),
   * oldest first, as parsed JSON for the store to check (start-up, before
   * `open`). `torn` is told about each segment whose end did not hold a
   * whole record.
   */
  *replay(held: number, torn: (segment: string, at: number) => void): Generator<unknown> {
    for (const segment of this.unheld(held)) yield* this.entries(segment, torn);
  }

  /**
   * The segments after `held` and before `below`, oldest first; those up to
   * `held` are deleted (the file holds them). A store that opened its new
   * segment before its replay (to take entries meanwhile) reads these one by
   * one with `entries`, and may record each one read in its file.
   */
  unheld(held: number, below = Infinity): { seq: number; name: string; size: number }[] {
    const out: { seq: number; name: string; size: number }[] = [];
    for (const { seq, name } of this.segments()) {
      if (seq <= held) { fs.rmSync(name, { force: true }); continue; }
      if (seq >= below) break;
      out.push({ seq, name, size: fs.statSync(name, { throwIfNoEntry: false })?.size ?? 0 });
    }
    return out;
  }

  /** The entries of one segment `unheld` listed; its bytes count as not yet folded. */
  *entries(segment: { name: string }, torn: (segment: string, at: number) => void): Generator<unknown> {
    const data = fs.readFileSync(segment.name);
    this.bytes += data.length;
    yield* records(data, (at) => torn(segment.name, at));
  }

  /**
   * The entries appended since the segment `from` was opened, the open
   * segment's up to its last whole record (a store that took entries while
   * it replayed older segments reads them back; `from` is `openSeq` then).
   */
  *since(from: number, torn: (segment: string, at: number) => void): Generator<unknown> {
    for (const { seq, name } of this.segments()) {
      if (seq < from) continue;
      if (seq !== this.seq || this.fd === undefined) {
        yield* records(fs.readFileSync(name), (at) => torn(name, at));
        continue;
      }
      const data = Buffer.allocUnsafe(this.offset);
      let done = 0;
      while (done < data.length) done += fs.readSync(this.fd, data, done, data.length - done, done);
      yield* records(data, (at) => torn(name, at));
    }
  }

  /** The number of the open segment. */
  get openSeq(): number {
    return this.seq;
  }

  /** Start a new segment after the existing ones (they stay until the next fold) and after `held`. */
  open(held: number): void {
    const last = this.segments().pop();
    this.startSegment(Math.max(last?.seq ?? 0, held) + 1);
  }

  get isOpen(): boolean {
    return this.fd !== undefined;
  }

  /** Append one entry and fsync it, blocking (a thread of its own); throws when it is not on disk (then nothing of it counts). */
  append(entry: unknown): void {
    const { fd, record } = this.record(JSON.stringify(entry));
    try {
      let done = 0;
      while (done < record.length) done += fs.writeSync(fd, record, done, record.length - done, this.offset + done);
      fs.fdatasyncSync(fd);
    } catch (err) {
      this.cut(fd);
      throw err;
    }
    this.appended(record.length);
  }

  /** The same without blocking the thread: the write and the fsync run in the thread pool. */
  appendAsync(entry: unknown): Promise<void> {
    return this.appendJsonAsync(JSON.stringify(entry));
  }

  /** `appendAsync` of an entry the caller already wrote as JSON (the items file builds it item by item, within its bounds). */
  async appendJsonAsync(json: string): Promise<void> {
    const { fd, record } = this.record(json);
    // the text is not kept while the write and its fsync run (its bytes are): a large record
    // held twice for that long outlives the young generation and is only freed late
    json = '';
    try {
      let done = 0;
      while (done < record.length) done += (await write(fd, record, done, record.length - done, this.offset + done)).bytesWritten;
      await fdatasync(fd);
    } catch (err) {
      this.cut(fd);
      throw err;
    }
    this.appended(record.length);
  }

  /**
   * Fold, step 1: later entries go to a new segment. Returns the last
   * segment whose entries the store's memory held at this moment.
   */
  rotate(): number {
    // an empty segment goes on taking entries: a fold that fails again and again makes no new files
    if (this.offset === 0 && this.fd !== undefined) return this.seq - 1;
    const upTo = this.seq;
    this.startSegment(this.seq + 1);
    return upTo;
  }

  /**
   * `rotate` without blocking the thread, for a store whose next append
   * holds everything still wanted (the outbox): `upTo` as from rotate;
   * `syncDir` (when a segment was made) must be awaited after that append
   * and before it counts, so the new name is on disk too. (On ext4 the
   * append's own fdatasync has mostly carried the name already: the
   * directory's fsync then costs little.)
   */
  async rotateAsync(): Promise<{ upTo: number; syncDir?: () => Promise<void> }> {
    if (this.offset === 0 && this.fd !== undefined) return { upTo: this.seq - 1 };
    const upTo = this.seq;
    const fd = await open(`${this.file}.journal.${upTo + 1}`, 'w', 0o644);
    this.close();
    this.fd = fd;
    this.seq = upTo + 1;
    this.offset = 0;
    const dir = path.dirname(this.file);
    return {
      upTo,
      syncDir: async () => {
        const d = await open(dir, 'r');
        try { await fsync(d); } finally { await close(d); }
      },
    };
  }

  /** Fold, step 2, once the file holding them is on disk: delete the segments up to `upTo`. */
  drop(upTo: number): void {
    let left = this.offset;
    for (const s of this.segments()) {
      if (s.seq > upTo) {
        // segments kept besides the open one (a store that checkpointed part of a long replay) still count
        if (s.seq !== this.seq) { try { left += fs.statSync(s.name).size; } catch { /* gone meanwhile */ } }
        continue;
      }
      fs.rmSync(s.name, { force: true });
    }
    this.bytes = left;
  }

  /** Close the current segment; `tidy`: delete it when empty (at stop, so a stopped store leaves no empty journal). */
  close(tidy = false): void {
    if (this.fd === undefined) return;
    fs.closeSync(this.fd);
    this.fd = undefined;
    if (tidy && this.offset === 0) fs.rmSync(`${this.file}.journal.${this.seq}`, { force: true });
  }

  /** One entry (as JSON) as a record: header and payload. */
  private record(json: string): { fd: number; record: Buffer } {
    if (this.fd === undefined) throw new Error('the journal is not open');
    // encoded straight into the record (no payload buffer to copy)
    const length = Buffer.byteLength(json, 'utf8');
    const record = Buffer.allocUnsafe(HEADER + length);
    record.write(json, HEADER, 'utf8');
    record.writeUInt32LE(length, 0);
    record.writeUInt32LE(zlib.crc32(record.subarray(HEADER)), 4);
    return { fd: this.fd, record };
  }

  /** A failed append: a full disk may have kept part of the record; cut it off (blocking: a rare path), so later records follow whole ones. */
  private cut(fd: number): void {
    try { fs.ftruncateSync(fd, this.offset); } catch { this.startSegment(this.seq + 1); }
  }

  private appended(length: number): void {
    this.offset += length;
    this.bytes += length;
    this.written += length;
  }

  private startSegment(seq: number): void {
    this.close();
    const name = `${this.file}.journal.${seq}`;
    this.fd = fs.openSync(name, 'w+', 0o644); // read too: a store may read back what it appended (since)
    this.seq = seq;
    this.offset = 0;
    // the new name must survive a power cut too, or the entries appended to it would vanish with it
    const dir = fs.openSync(path.dirname(this.file), 'r');
    try { fs.fsyncSync(dir); } finally { fs.closeSync(dir); }
  }
}

/** The whole records of a segment's bytes, in order; `torn` is told where the first one that is not whole starts. */
function* records(data: Buffer, torn: (at: number) => void): Generator<unknown> {
  let at = 0;
  while (at < data.length) {
    if (data.length - at < HEADER) { torn(at); return; }
    const len = data.readUInt32LE(at);
    const crc = data.readUInt32LE(at + 4);
    const end = at + HEADER + len;
    if (end > data.length || zlib.crc32(data.subarray(at + HEADER, end)) !== crc) { torn(at); return; }
    let entry: unknown;
    try { entry = JSON.parse(data.subarray(at + HEADER, end).toString('utf8')); } catch { torn(at); return; }
    yield entry;
    at = end;
  }
}
