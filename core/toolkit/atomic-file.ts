import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import crypto from 'node:crypto';
import { GroupCommit, type WriteHold } from './group-commit';

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
    // wx: O_EXCL, a name that is already there (a planted link) is never opened
    const fh = await fsp.open(tmp, 'wx', mode);
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
    const fd = fs.openSync(tmp, 'wx', mode);
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

const TEMP = /^\..+\.(\d+)\.[0-9a-f]{8}\.tmp$/;

/** The id of the process that wrote temp file `name` (a name tempName gives), or undefined for any other name. */
export function tempWriter(name: string): number | undefined {
  const m = TEMP.exec(name);
  return m ? Number(m[1]) : undefined;
}

async function syncDir(dir: string): Promise<void> {
  const dh = await fsp.open(dir, 'r');
  try { await dh.sync(); } finally { await dh.close(); }
}

/**
 * One file written whole, atomically, through a group commit
 * (./group-commit.ts): writes are serialised, and the changes asked for
 * while one is under way are all carried by the next.
 */
export class AtomicFile {
  private produce: () => string | Uint8Array = () => '';
  private readonly commits: GroupCommit;

  /** `holds`: the controller's (ctx.writes), whose JSON RPC batches hold this file's writes back */
  constructor(readonly file: string, holds: WriteHold, readonly mode = 0o644) {
    this.commits = new GroupCommit(holds, () => writeFileAtomic(this.file, this.produce(), this.mode));
  }

  /**
   * Write what `produce` returns when the write starts (so the newest
   * state); resolves when it is on disk. `undo` takes the caller's change
   * back out of memory when that write fails (see GroupCommit).
   */
  write(produce: () => string | Uint8Array, undo?: () => void): Promise<void> {
    this.produce = produce;
    return this.commits.request(undo);
  }

  /** Wait for every write asked for so far. */
  flush(): Promise<void> {
    return this.commits.settled();
  }

  /** The newest write asked for: resolves once it is on disk, rejects when it failed. */
  written(): Promise<void> {
    return this.commits.last();
  }
}
