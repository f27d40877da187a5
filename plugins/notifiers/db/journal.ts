import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { HistoryRow } from './schema';

/**
 * The journal of a sql.js history file: every batch of rows is appended to a
 * segment file beside the history file and fsync'd before the batch counts
 * as stored, so a crash loses no stored row although the history file itself
 * is rewritten (checkpointed) only now and then.
 *
 * Segments are `<file>.journal.<n>` (never `<file>-journal`: that name is
 * SQLite's own rollback journal, and a reader would take ours for a hot one).
 * A checkpoint starts a new segment, writes the history file, then deletes
 * the older segments: a crash at any point leaves the rows in the file, in a
 * segment, or in both. The file records the last segment it holds (SQLite's
 * `user_version` header field, free for applications), so a segment the
 * crash left behind although the file holds it is skipped at replay: its
 * rows are not counted twice, and an older state of a key never overwrites
 * a later one the file has.
 *
 * A record is: length (u32 LE), CRC-32 of the payload (u32 LE), payload (the
 * rows as JSON). A torn record at the end of a segment (a crash in the middle
 * of an append that was never acknowledged) fails its length or CRC check and
 * ends the replay of that segment.
 */
const HEADER = 8;

export class Journal {
  private fd: number | undefined;
  private seq = 0;
  /** end of the last whole record in the current segment */
  private offset = 0;
  /** bytes of every segment not yet folded into the history file */
  bytes = 0;
  /** bytes appended since the process started (figures) */
  written = 0;

  constructor(readonly file: string) {}

  /** Segments of this history file that exist, oldest first. */
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
   * Every batch of every segment after `held` (the last one the file holds),
   * oldest first (start-up, before `open`).
   * `torn` is told about each segment whose end did not hold a whole record.
   */
  *replay(held: number, torn: (segment: string, at: number) => void): Generator<HistoryRow[]> {
    for (const { seq, name } of this.segments()) {
      if (seq <= held) { fs.rmSync(name, { force: true }); continue; } // the file holds it
      const data = fs.readFileSync(name);
      let at = 0;
      while (at < data.length) {
        if (data.length - at < HEADER) { torn(name, at); break; }
        const len = data.readUInt32LE(at);
        const crc = data.readUInt32LE(at + 4);
        const end = at + HEADER + len;
        if (end > data.length || zlib.crc32(data.subarray(at + HEADER, end)) !== crc) { torn(name, at); break; }
        let rows: unknown;
        try { rows = JSON.parse(data.subarray(at + HEADER, end).toString('utf8')); } catch { torn(name, at); break; }
        if (Array.isArray(rows)) yield rows as HistoryRow[];
        at = end;
      }
      this.bytes += data.length;
    }
  }

  /** Start a new segment after the existing ones (they stay until the next checkpoint) and after `held`. */
  open(held: number): void {
    const last = this.segments().pop();
    this.startSegment(Math.max(last?.seq ?? 0, held) + 1);
  }

  /** Append one batch and fsync it; throws when it is not on disk (then nothing of it counts). */
  append(rows: HistoryRow[]): void {
    if (this.fd === undefined) throw new Error('the journal is not open');
    const payload = Buffer.from(JSON.stringify(rows), 'utf8');
    const record = Buffer.allocUnsafe(HEADER + payload.length);
    record.writeUInt32LE(payload.length, 0);
    record.writeUInt32LE(zlib.crc32(payload), 4);
    payload.copy(record, HEADER);
    try {
      let done = 0;
      while (done < record.length) done += fs.writeSync(this.fd, record, done, record.length - done, this.offset + done);
      fs.fdatasyncSync(this.fd);
    } catch (err) {
      // a full disk may have kept part of the record: cut it off, so later records follow whole ones
      try { fs.ftruncateSync(this.fd, this.offset); } catch { this.startSegment(this.seq + 1); }
      throw err;
    }
    this.offset += record.length;
    this.bytes += record.length;
    this.written += record.length;
  }

  /**
   * Checkpoint, step 1: later batches go to a new segment. Returns the last
   * segment whose rows the database held at this moment.
   */
  rotate(): number {
    const upTo = this.seq;
    this.startSegment(this.seq + 1);
    return upTo;
  }

  /** Checkpoint, step 2, once the history file holding them is on disk: delete the segments up to `upTo`. */
  drop(upTo: number): void {
    for (const s of this.segments()) {
      if (s.seq > upTo) continue;
      fs.rmSync(s.name, { force: true });
    }
    this.bytes = this.offset;
  }

  /** Close the current segment; `tidy`: delete it when empty (at stop, so a stopped history leaves no journal). */
  close(tidy = false): void {
    if (this.fd === undefined) return;
    fs.closeSync(this.fd);
    this.fd = undefined;
    if (tidy && this.offset === 0) fs.rmSync(`${this.file}.journal.${this.seq}`, { force: true });
  }

  private startSegment(seq: number): void {
    this.close();
    const name = `${this.file}.journal.${seq}`;
    this.fd = fs.openSync(name, 'w', 0o644);
    this.seq = seq;
    this.offset = 0;
    // the new name must survive a power cut too, or the rows appended to it would vanish with it
    const dir = fs.openSync(path.dirname(this.file), 'r');
    try { fs.fsyncSync(dir); } finally { fs.closeSync(dir); }
  }
}
