import fs from 'node:fs';
import fsp, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { accessDenied, ApiError, functionFailed, invalidParams, notFound } from '../../../core/errors';

/*
 * Paths of the file functions, confined to runtime/ without races. Node has
 * no openat(), so a folder is held open and what lies in it is reached as
 * /proc/self/fd/<folder>/<name>: the kernel looks the name up in that very
 * folder, whatever has been renamed or swapped on the way since. Every
 * folder and file opened is checked after opening, by its real path
 * (readlink of /proc/self/fd/<n>), to be inside runtime/: symbolic links
 * that stay inside are followed (plugins/sysapi/README.md, cmd and runtime files), one that leads out
 * is refused, and a link swapped in after the check changes nothing, since
 * everything afterwards goes through the descriptor that was checked.
 */

const O_DIR = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY;
/** O_NONBLOCK: a FIFO put in runtime/ must not hang the call */
const O_FILE = fs.constants.O_RDONLY | fs.constants.O_NONBLOCK;
/** The longest name of one path component and of a whole path (Linux NAME_MAX, PATH_MAX) */
const NAME_MAX = 255;
const PATH_MAX = 4095;
/** Percent-encoded /, \ or . : a path that was encoded twice, refused rather than guessed at. */
const ENCODED = /%(2f|5c|2e)/i;
/** The first bytes of every SQLite file: the user db and history files are never runtime text files. */
const SQLITE = Buffer.from('SQLite format 3\0', 'latin1');
/** The journal segments of the controller's stores (core/toolkit/journal.ts), wherever a store keeps its file. */
const JOURNAL = /\.journal\.\d+$/;

/** What lies in the open folder `fd` under `name`, as a path the kernel resolves from that folder. */
export const inFolder = (fd: number, name?: string) => (name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`);

const outside = (i: string, why: string) => invalidParams(`parameter i: ${i} ${why}; paths must stay inside runtime/`);

/** An open folder inside runtime/, checked. */
export interface Folder { fh: FileHandle; real: string }

/** An open existing file inside runtime/, checked: a regular file with one link, not a state file of the controller. */
export interface OpenFile { fh: FileHandle; real: string; rel: string; st: fs.Stats }

/**
 * runtime/ for the file functions. `protectedPaths` are the controller's own
 * state files and folders (absolute: the user db's folder, the notifiers'
 * outbox folder with their dead letters, ...), `runtime/<product>_*.json`
 * `runtime/<product>_*.bdseq` (a Sparkplug node's bdSeq) its state
 * files of any kind, and `*.journal.<n>` the journals of its stores; with
 * everything in them they cannot be read, written, chmodded or deleted
 * through the file functions.
 */
export class RuntimeFolder {
  private rootReal?: string;
  private readonly stateName: RegExp;

  constructor(private readonly root: string, product: string, private readonly protectedPaths: string[]) {
    this.stateName = new RegExp(`^${product}_.*\\.(json|bdseq)$`);
  }

  /** The real path of runtime/ (once a folder was opened). */
  rootPath(): string {
    return this.rootReal!;
  }

  /** Check `i` by its text and split it into names (no `.`, `..` or empty ones), relative to runtime/. */
  parts(i: string): string[] {
    if (!i || i.includes('\0')) throw outside(JSON.stringify(i), 'is empty or holds a NUL');
    if (i.includes('\\') || ENCODED.test(i)) throw outside(i, 'holds a backslash or an encoded separator');
    if (path.isAbsolute(i)) throw outside(i, 'is absolute');
    // resolving would drop the slash and name the file before it: `a/` would write or read the file `a`
    if (i.endsWith('/')) throw invalidParams(`parameter i: ${i} ends with a slash, naming a folder; runtime files are files`);
    if (Buffer.byteLength(i) > PATH_MAX) throw invalidParams(`parameter i: longer than ${PATH_MAX} bytes`);
    const rel = path.posix.normalize(i);
    if (rel === '.' || rel === '..' || rel.startsWith('../')) throw outside(i, 'leads out of runtime/ (or names runtime/ itself)');
    const parts = rel.split('/');
    if (parts.some((p) => Buffer.byteLength(p) > NAME_MAX)) throw invalidParams(`parameter i: a name in ${i.slice(0, 64)}… is longer than ${NAME_MAX} bytes`);
    return parts;
  }

  /** Open the folder `parts` names (creating what is missing when `create`), every step checked. */
  async folder(i: string, parts: string[], create: boolean): Promise<Folder> {
    const rootReal = (this.rootReal ??= await fsp.realpath(this.root));
    let cur: Folder = { fh: await fsp.open(rootReal, O_DIR), real: rootReal };
    try {
      for (const name of parts) {
        const next = await this.openIn(i, cur, name, O_DIR, create);
        await cur.fh.close();
        cur = next;
      }
      return cur;
    } catch (err) {
      await cur.fh.close().catch(() => {});
      throw err;
    }
  }

  /** Open the existing file `name` in `folder` and check it; closed again when a check fails. */
  async file(i: string, folder: Folder, name: string): Promise<OpenFile> {
    const f = await this.openIn(i, folder, name, O_FILE, false);
    try {
      const st = await f.fh.stat();
      if (!st.isFile()) throw invalidParams(`parameter i: ${i} is not a regular file`);
      // a hard link planted in runtime/ would give the file functions a file from anywhere
      if (st.nlink > 1) throw accessDenied(`${i} has more than one link: the file functions touch only files with one`);
      const head = Buffer.alloc(SQLITE.length);
      const { bytesRead } = await f.fh.read(head, 0, head.length, 0);
      if (bytesRead === head.length && head.equals(SQLITE)) throw this.refused(i);
      return { ...f, rel: path.relative(this.rootReal!, f.real), st };
    } catch (err) {
      await f.fh.close();
      throw err;
    }
  }

  /** Refuse the real path `real` when it is a state file of the controller or lies in a state folder. */
  guard(i: string, real: string): void {
    if (this.protectedPaths.some((p) => real === p || real.startsWith(p + path.sep))) throw this.refused(i);
    if (path.dirname(real) === this.rootReal && this.stateName.test(path.basename(real))) throw this.refused(i);
    if (JOURNAL.test(real)) throw this.refused(i);
  }

  private refused(i: string): ApiError {
    return accessDenied(`${i} is a state file of the controller: the file functions cannot touch it`);
  }

  /** Open `name` in `folder` (a link followed, then checked by where it really is). */
  private async openIn(i: string, folder: Folder, name: string, flags: number, create: boolean): Promise<Folder> {
    const where = inFolder(folder.fh.fd, name);
    let fh: FileHandle;
    try {
      fh = await fsp.open(where, flags);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || !create) throw await this.openError(err, i, where);
      this.guard(i, path.join(folder.real, name)); // no state folder is made just to be refused
      await fsp.mkdir(where).catch((e) => { if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e; });
      try { fh = await fsp.open(where, flags); } catch (e) { throw await this.openError(e, i, where); }
    }
    try {
      const real = await fsp.readlink(inFolder(fh.fd));
      if (real !== this.rootReal && !real.startsWith(this.rootReal + path.sep)) throw outside(i, 'leads out of runtime/ through a symbolic link');
      this.guard(i, real);
      return { fh, real };
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  /** The API error of a failed open of `where`. */
  private async openError(err: unknown, i: string, where: string): Promise<unknown> {
    switch ((err as NodeJS.ErrnoException).code) {
      case 'ENOENT':
        // missing, unless it is a link whose target is missing: that target cannot be checked
        if (await fsp.lstat(where).then((s) => s.isSymbolicLink(), () => false)) return outside(i, 'is a symbolic link to a missing target');
        return notFound(`file ${i}`);
      case 'ENOTDIR': return invalidParams(`parameter i: a part of ${i} is a file, not a folder`);
      case 'EISDIR': return invalidParams(`parameter i: ${i} is not a regular file`);
      case 'ELOOP': return outside(i, 'has a loop of symbolic links');
      case 'ENAMETOOLONG': return invalidParams('parameter i: a name is too long');
      case 'EACCES': case 'EPERM': return functionFailed(`${i}: permission denied`);
      default: return err;
    }
  }
}
