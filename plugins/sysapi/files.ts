import path from 'node:path';
import { definePlugin } from '../../core/plugin';
import { bound } from '../../core/settings/schema';
import { accessDenied, ApiError, busy, functionFailed, invalidParams } from '../../core/errors';
import { writeFileAtomic } from '../../core/store/atomic';
import { bool, str } from '../../core/params';
import { inFolder, RuntimeFolder, type OpenFile } from './files/confine';

/** Limits of the runtime file functions; settable in etc/<product>.ini, section [sysapi]. */
export const FilesSettings = {
  file_max_size: bound(16 * 1024 * 1024, 'largest file file_get reads and file_put writes (UTF-8)', 'bytes'),
};

/** The only two modes runtime files have (spec "File management"). */
const MODE_PLAIN = 0o644;
const MODE_EXEC = 0o755;

const isExec = (mode: number) => (mode & 0o111) !== 0;

/** Text as runtime files hold it: valid UTF-8 with no NUL; anything else is binary and refused. */
const utf8 = new TextDecoder('utf-8', { fatal: true });
function decodeText(buf: Buffer): string | undefined {
  if (buf.includes(0)) return undefined;
  try { return utf8.decode(buf); } catch { return undefined; }
}

/** A string that survives UTF-8 encoding unchanged (no lone surrogate halves, which would be lost). */
function isWellFormed(s: string): boolean {
  return Buffer.from(s, 'utf8').toString('utf8') === s;
}

/** `file_put`, `file_get`, `file_set_exec`: text files inside runtime/ (master, [sysapi] file_management). */
export const plugin = definePlugin({
  name: 'sysapi-files',
  kind: 'sysapi',
  version: '1.0.0',
  settings: { sysapi: FilesSettings },
  start(ctx) {
    const { file_max_size: maxSize } = ctx.config.section('sysapi', FilesSettings);
    const { paths } = ctx;
    // the controller's own state: never read, written or chmodded through these functions
    const runtime = new RuntimeFolder(paths.runtime, paths.product, [
      path.dirname(paths.userDb), paths.cvarsFile, paths.itemsFile, paths.corescriptsConfig, paths.notifyDir,
    ]);

    /** The names of `i`, once file management is known to be on. */
    function parts(i: string): string[] {
      if (!ctx.config.sysapi.file_management) throw accessDenied('file management is disabled ([sysapi] file_management)');
      return runtime.parts(i);
    }

    /** Run `use` on the existing regular file `i`, opened and checked; closed afterwards. */
    async function withFile<T>(i: string, use: (f: OpenFile) => Promise<T>): Promise<T> {
      const names = parts(i);
      const folder = await runtime.folder(i, names.slice(0, -1), false);
      try {
        const f = await runtime.file(i, folder, names[names.length - 1]);
        try { return await use(f); } finally { await f.fh.close(); }
      } finally {
        await folder.fh.close();
      }
    }

    const i = str('path relative to runtime/, without a leading slash').req();

    ctx.register({
      name: 'file_get',
      permission: 'master',
      params: { i },
      description: 'Read a text file in runtime/.',
      returns: 'object with file (relative path), data (text) and e (executable)',
      handler: (p: { i: string }) => withFile(p.i, async ({ fh, st, rel }) => {
        if (st.size > maxSize) throw functionFailed(`file ${p.i} is larger than ${maxSize} bytes`);
        // read at most one byte past the bound: a file growing meanwhile is still caught
        const buf = Buffer.alloc(st.size + 1);
        const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
        if (bytesRead > maxSize) throw functionFailed(`file ${p.i} is larger than ${maxSize} bytes`);
        const data = decodeText(buf.subarray(0, bytesRead));
        if (data === undefined) throw functionFailed(`file ${p.i} holds binary data; runtime files are text`);
        return { file: rel.split(path.sep).join('/'), data, e: isExec(st.mode) };
      }),
    });

    ctx.register({
      name: 'file_put',
      permission: 'master',
      params: { i, m: str('file content, text').req() },
      description: 'Write a text file in runtime/ (atomically; parent folders are created, an existing file is replaced).',
      returns: 'OK; a new file gets mode 0644, an existing executable file keeps 0755',
      async handler(p: { i: string; m: string }) {
        if (p.m.includes('\0') || !isWellFormed(p.m)) throw invalidParams('parameter m: binary data; runtime files are text');
        if (Buffer.byteLength(p.m) > maxSize) throw invalidParams(`parameter m: larger than ${maxSize} bytes`);
        const names = parts(p.i);
        let folder = await runtime.folder(p.i, names.slice(0, -1), true);
        try {
          let name = names[names.length - 1];
          let mode = MODE_PLAIN;
          let existing: OpenFile | undefined;
          try {
            existing = await runtime.file(p.i, folder, name);
          } catch (err) {
            if (!(err instanceof ApiError && err.kind === 'not_found')) throw err;
          }
          if (existing) {
            await existing.fh.close();
            if (isExec(existing.st.mode)) mode = MODE_EXEC;
            if (existing.real !== path.join(folder.real, name)) {
              // the name is a link (checked to stay inside): the file it names is replaced, the link kept
              const rel = path.relative(runtime.rootPath(), existing.real).split(path.sep);
              await folder.fh.close();
              folder = await runtime.folder(p.i, rel.slice(0, -1), false);
              name = rel[rel.length - 1];
            }
          }
          runtime.guard(p.i, path.join(folder.real, name));
          // temp file and rename in the folder held open: a link swapped in on the way cannot send the write elsewhere
          await writeFileAtomic(inFolder(folder.fh.fd, name), p.m, mode).catch((err: NodeJS.ErrnoException) => {
            // the folder held open was removed meanwhile (another folder renamed over it): nothing was written
            if (err.code === 'ENOENT') throw busy(`the folder of ${p.i} was removed while writing; nothing was written`);
            throw err;
          });
        } finally {
          await folder.fh.close();
        }
        return true;
      },
    });

    ctx.register({
      name: 'file_set_exec',
      permission: 'master',
      params: { i, e: bool('true: mode 0755 (executable); false: mode 0644').req() },
      description: 'Set or clear the executable flag of a file in runtime/.',
      handler: (p: { i: string; e: boolean }) => withFile(p.i, async ({ fh }) => {
        await fh.chmod(p.e ? MODE_EXEC : MODE_PLAIN);
        return true;
      }),
    });
  },
});
