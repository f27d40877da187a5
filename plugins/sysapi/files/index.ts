import fsp from 'node:fs/promises';
import path from 'node:path';
import { definePlugin } from '../../../core/plugin';
import { bound, bool, text } from '../../../core/schema';
import { accessDenied, ApiError, busy, functionFailed, invalidParams, notFound } from '../../../core/errors';
import { writeFileAtomic } from '../../../core/toolkit/atomic-file';
import { inFolder, RuntimeFolder, type OpenFile } from './folders';

/** Limits of the runtime file functions; settable in etc/<product>.ini, section [sysapi]. */
export const FilesSettings = {
  file_max_size: bound(16 * 1024 * 1024, 'largest file file_get reads and file_put writes (UTF-8)', 'bytes'),
};

/** The only two modes runtime files have (spec "File management"). */
const MODE_PLAIN = 0o644;
const MODE_EXEC = 0o755;

const isExec = (mode: number) => (mode & 0o111) !== 0;

/**
 * A file's content as EVA ICS 3.3 answered it: valid UTF-8 as text, anything
 * else base64-encoded (a byte order mark is kept: it is part of the file).
 */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
function decodeText(buf: Buffer): string | undefined {
  try { return utf8.decode(buf); } catch { return undefined; }
}

/** Strict base64 (RFC 4648, padded, whitespace-free): a mistyped character must not silently drop bytes. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A string that survives UTF-8 encoding unchanged (no lone surrogate halves, which would be lost). */
function isWellFormed(s: string): boolean {
  return Buffer.from(s, 'utf8').toString('utf8') === s;
}

/** `file_put`, `file_get`, `file_unlink`, `file_set_exec`: files inside runtime/ (master, [sysapi] file_management). */
export const plugin = definePlugin({
  name: 'sysapi-files',
  kind: 'sysapi',
  version: '1.0.0',
  settings: { sysapi: FilesSettings },
  // file_put, file_unlink and file_set_exec change files between exec_before_save and exec_after_save (EVA ICS 3.3)
  needs: ['saveHooks'],
  start(ctx) {
    const hooks = ctx.service('saveHooks');
    const { file_max_size: maxSize } = ctx.config.section('sysapi', FilesSettings);
    const { paths } = ctx;
    // the controller's own state: never read, written or chmodded through these functions
    const runtime = new RuntimeFolder(paths.runtime, paths.product, [
      path.dirname(paths.userDb), paths.cvarsFile, paths.itemsFile, paths.corescriptsConfig, paths.notifyDir,
      // the web hooks' outboxes and dead letters (outboxDir of plugins/notifiers/host/outbox.ts): a dead
      // letter planted there would go out (signed) on replay
      path.join(paths.runtime, 'outbox'),
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

    const i = text('path relative to runtime/, without a leading slash').req();

    /** The bytes file_put writes: `m` as UTF-8 text, or (with `b`) the bytes its base64 encodes; bounded by file_max_size. */
    function content(m: string, b: boolean): Buffer | string {
      if (b) {
        // checked before decoding: the decoded size is known from the length, and Buffer.from would skip bad characters
        if (!BASE64.test(m)) throw invalidParams('parameter m: not base64 (RFC 4648, padded, no spaces)');
        if ((m.length / 4) * 3 - (m.endsWith('==') ? 2 : m.endsWith('=') ? 1 : 0) > maxSize) {
          throw invalidParams(`parameter m: larger than ${maxSize} bytes`);
        }
        return Buffer.from(m, 'base64');
      }
      if (m.includes('\0') || !isWellFormed(m)) throw invalidParams('parameter m: binary data; text only, or base64 with b=true');
      if (Buffer.byteLength(m) > maxSize) throw invalidParams(`parameter m: larger than ${maxSize} bytes`);
      return m;
    }

    ctx.register({
      name: 'file_get',
      changes: false,
      permission: 'master',
      params: { i, b: bool('true: answer the content base64-encoded whatever it holds') },
      description: 'Read a file in runtime/: UTF-8 text as it is, anything else (or with b) base64-encoded.',
      returns: 'object with file (relative path), data (text or base64), e (executable) and content_type (text/plain or application/octet-stream for base64)',
      handler: (p) => withFile(p.i, async ({ fh, st, rel }) => {
        if (st.size > maxSize) throw functionFailed(`file ${p.i} is larger than ${maxSize} bytes`);
        // read at most one byte past the bound: a file growing meanwhile is still caught
        const buf = Buffer.alloc(st.size + 1);
        const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
        if (bytesRead > maxSize) throw functionFailed(`file ${p.i} is larger than ${maxSize} bytes`);
        const bytes = buf.subarray(0, bytesRead);
        const text = p.b ? undefined : decodeText(bytes);
        const file = rel.split(path.sep).join('/');
        if (text !== undefined) return { file, data: text, e: isExec(st.mode), content_type: 'text/plain' };
        return { file, data: bytes.toString('base64'), e: isExec(st.mode), content_type: 'application/octet-stream' };
      }),
    });

    ctx.register({
      name: 'file_put',
      permission: 'master',
      params: {
        i,
        m: text('file content: text, or base64 with b; none: an empty file'),
        b: bool('true: m is base64, written as the bytes it encodes'),
      },
      description: 'Write a file in runtime/ (atomically; parent folders are created, an existing file is replaced).',
      returns: 'OK; a new file gets mode 0644, an existing executable file keeps 0755',
      async handler(p) {
        const data = content(p.m ?? '', p.b === true);
        const names = parts(p.i);
        await hooks.around(async () => {
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
            await writeFileAtomic(inFolder(folder.fh.fd, name), data, mode).catch((err: NodeJS.ErrnoException) => {
              // the folder held open was removed meanwhile (another folder renamed over it): nothing was written
              if (err.code === 'ENOENT') throw busy(`the folder of ${p.i} was removed while writing; nothing was written`);
              throw err;
            });
          } finally {
            await folder.fh.close();
          }
        });
        return true;
      },
    });

    ctx.register({
      name: 'file_unlink',
      returns: 'OK',
      permission: 'master',
      params: { i },
      description: 'Delete a file in runtime/ (a symbolic link is removed itself, never the file it names).',
      async handler(p) {
        const names = parts(p.i);
        const name = names[names.length - 1];
        const folder = await runtime.folder(p.i, names.slice(0, -1), false);
        try {
          // the checks of every file function: a regular file with one link, inside runtime/, no state file
          const f = await runtime.file(p.i, folder, name);
          await f.fh.close();
          // the folder held open may have been renamed since it was checked: where it is now counts
          const real = await fsp.readlink(inFolder(folder.fh.fd));
          runtime.guard(p.i, path.join(real, name));
          // unlink never follows the last name: a link swapped in since the check is removed, not what it names
          await hooks.around(() => fsp.unlink(inFolder(folder.fh.fd, name)).catch((err: NodeJS.ErrnoException) => {
            if (err.code === 'ENOENT') throw notFound(`file ${p.i}`);
            if (err.code === 'EISDIR' || err.code === 'EPERM') throw invalidParams(`parameter i: ${p.i} is not a regular file`);
            throw err;
          }));
        } finally {
          await folder.fh.close();
        }
        return true;
      },
    });

    ctx.register({
      name: 'file_set_exec',
      returns: 'OK',
      permission: 'master',
      params: { i, e: bool('true: mode 0755 (executable); false: mode 0644').req() },
      description: 'Set or clear the executable flag of a file in runtime/.',
      handler: (p) => withFile(p.i, async ({ fh }) => {
        await hooks.around(() => fh.chmod(p.e ? MODE_EXEC : MODE_PLAIN));
        return true;
      }),
    });
  },
});
