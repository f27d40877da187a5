import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import crypto from 'node:crypto';

/**
 * Every file the controller writes goes through here: write a temp file in
 * the same folder, fsync it, rename it over the target, fsync the folder. A
 * power cut leaves the old or the new file, never a torn one.
 */
export async function writeFileAtomic(file: string, data: string | Uint8Array, mode = 0o644): Promise<void> {
  const dir = path.dirname(file);
  await fsp.mkdir(dir, { recursive: true });
  const tmp = tempName(file);
  try {
    const fh = await fsp.open(tmp, 'w', mode);
    try {
      await fh.writeFile(data);
      await fh.chmod(mode); // the umask must not change the mode asked for
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, file);
  } catch (err) {
    // a full disk or a file size limit must not also leave a half-written temp file behind
    await fsp.rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
  await syncDir(dir);
}

/** The same, synchronous: for the last writes at process exit. */
export function writeFileAtomicSync(file: string, data: string | Uint8Array, mode = 0o644): void {
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true });
  const tmp = tempName(file);
  try {
    const fd = fs.openSync(tmp, 'w', mode);
    try {
      fs.writeFileSync(fd, data);
      fs.fchmodSync(fd, mode);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (err) {
    try { fs.rmSync(tmp, { force: true }); } catch { /* the write's own error says more */ }
    throw err;
  }
  const dfd = fs.openSync(dir, 'r');
  try { fs.fsyncSync(dfd); } finally { fs.closeSync(dfd); }
}

/** The temp file of one write of `file`: .<name>.<pid>.<8 hex>.tmp beside it. */
function tempName(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`);
}

/** Whether a process of that id is running (signal 0 checks without sending). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Remove the temp files a killed writer of `file` left behind (written, never
 * renamed: they hold nothing the file lacks). Those of a process still
 * running, this one included, are left alone: they may be a write in
 * progress. Call it before the first write of `file`. Returns how many were
 * removed.
 */
export function removeStaleTemps(file: string): number {
  const dir = path.dirname(file);
  const prefix = `.${path.basename(file)}.`;
  let removed = 0;
  let names: string[];
  try { names = fs.readdirSync(dir); } catch { return 0; }
  for (const name of names) {
    const m = name.startsWith(prefix) ? /^(\d+)\.[0-9a-f]{8}\.tmp$/.exec(name.slice(prefix.length)) : null;
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || alive(pid)) continue;
    fs.rmSync(path.join(dir, name), { force: true });
    removed++;
  }
  return removed;
}

async function syncDir(dir: string): Promise<void> {
  const dh = await fsp.open(dir, 'r');
  try { await dh.sync(); } finally { await dh.close(); }
}

/**
 * Serialises writes of one file: each write waits for the one before, and a
 * burst of writes collapses to the newest content (the ones in between are
 * superseded before they start).
 */
export class AtomicFile {
  private running: Promise<void> = Promise.resolve();
  private pending: (() => string | Uint8Array) | undefined;
  private waiting: Promise<void> | undefined;

  constructor(readonly file: string, readonly mode = 0o644) {}

  /** Write what `produce` returns once the previous write is done; resolves when it is on disk. */
  write(produce: () => string | Uint8Array): Promise<void> {
    this.pending = produce;
    if (!this.waiting) {
      this.waiting = this.running.catch(() => {}).then(() => {
        const p = this.pending!;
        this.pending = undefined;
        this.waiting = undefined;
        this.running = writeFileAtomic(this.file, p(), this.mode);
        return this.running;
      });
    }
    return this.waiting;
  }

  /** Wait for every write asked for so far. */
  async flush(): Promise<void> {
    while (this.waiting) await this.waiting.catch(() => {});
    await this.running.catch(() => {});
  }
}
