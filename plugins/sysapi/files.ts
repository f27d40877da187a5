import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { definePlugin } from '../../core/plugin';
import { typed } from '../../core/config';
import { accessDenied, functionFailed, invalidParams, notFound } from '../../core/errors';
import { writeFileAtomic } from '../../core/store/atomic';
import { bool, str } from '../../core/params';
import { confine, type RuntimePath } from './files/confine';

/** Limits of the runtime file functions; settable in etc/<product>.ini, section [sysapi]. */
export const FilesDefaults = {
  /** largest file file_get reads and file_put writes, bytes (UTF-8) */
  file_max_size: 16 * 1024 * 1024,
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
  start(ctx) {
    const { file_max_size: maxSize } = typed(FilesDefaults, ctx.config.raw.sysapi);

    /** The checked path of `i`, once file management is known to be on. */
    function target(i: string): Promise<RuntimePath> {
      if (!ctx.config.sysapi.file_management) throw accessDenied('file management is disabled ([sysapi] file_management)');
      return confine(ctx.paths.runtime, i);
    }

    /** The existing regular file at `i`. */
    async function existingFile(i: string): Promise<RuntimePath> {
      const t = await target(i);
      if (!t.exists) throw notFound(`file ${i}`);
      const st = await fsp.stat(t.real);
      if (!st.isFile()) throw invalidParams(`parameter i: ${i} is not a regular file`);
      return t;
    }

    const i = str('path relative to runtime/, without a leading slash').req();

    ctx.register({
      name: 'file_get',
      permission: 'master',
      params: { i },
      description: 'Read a text file in runtime/.',
      returns: 'object with file (relative path), data (text) and e (executable)',
      async handler(p: { i: string }) {
        const t = await target(p.i);
        if (!t.exists) throw notFound(`file ${p.i}`);
        // O_NONBLOCK: a FIFO put in runtime/ must not hang the call; O_NOFOLLOW: the path was checked as it is now
        const fh = await fsp.open(t.real, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOFOLLOW);
        try {
          const st = await fh.stat();
          if (!st.isFile()) throw invalidParams(`parameter i: ${p.i} is not a regular file`);
          if (st.size > maxSize) throw functionFailed(`file ${p.i} is larger than ${maxSize} bytes`);
          // read at most one byte past the bound: a file growing meanwhile is still caught
          const buf = Buffer.alloc(st.size + 1);
          const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
          if (bytesRead > maxSize) throw functionFailed(`file ${p.i} is larger than ${maxSize} bytes`);
          const data = decodeText(buf.subarray(0, bytesRead));
          if (data === undefined) throw functionFailed(`file ${p.i} holds binary data; runtime files are text`);
          return { file: t.rel, data, e: isExec(st.mode) };
        } finally {
          await fh.close();
        }
      },
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
        const t = await target(p.i);
        let mode = MODE_PLAIN;
        if (t.exists) {
          const st = await fsp.stat(t.real);
          if (!st.isFile()) throw invalidParams(`parameter i: ${p.i} is not a regular file`);
          if (isExec(st.mode)) mode = MODE_EXEC;
        }
        await writeFileAtomic(t.real, p.m, mode);
        return true;
      },
    });

    ctx.register({
      name: 'file_set_exec',
      permission: 'master',
      params: { i, e: bool('true: mode 0755 (executable); false: mode 0644').req() },
      description: 'Set or clear the executable flag of a file in runtime/.',
      async handler(p: { i: string; e: boolean }) {
        const t = await existingFile(p.i);
        await fsp.chmod(t.real, p.e ? MODE_EXEC : MODE_PLAIN);
        return true;
      },
    });
  },
});
