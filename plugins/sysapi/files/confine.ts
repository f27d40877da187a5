import fsp from 'node:fs/promises';
import path from 'node:path';
import { invalidParams } from '../../../core/errors';

/** A path inside runtime/, checked. */
export interface RuntimePath {
  /** the path relative to runtime/, normalised, with / separators */
  rel: string;
  /** where it really is, every symbolic link followed; inside runtime/ */
  real: string;
  /** false when nothing is there yet (file_put creates it) */
  exists: boolean;
}

const outside = (i: string, why: string) => invalidParams(`parameter i: ${i} ${why}; paths must stay inside runtime/`);

/** Percent-encoded /, \ or . : a path that was encoded twice, refused rather than guessed at. */
const ENCODED = /%(2f|5c|2e)/i;

function inside(root: string, p: string): boolean {
  return p.startsWith(root + path.sep);
}

/**
 * Resolve `i` (relative to runtime/) and make sure it stays there with every
 * symbolic link followed. `..` is resolved by name first; then the real path
 * of the longest part that exists is taken (so a link anywhere on the way,
 * to a file or to a folder, is followed) and must still be inside runtime/.
 * Anything else answers invalid_params (11 / 400).
 */
export async function confine(root: string, i: string): Promise<RuntimePath> {
  if (!i || i.includes('\0')) throw outside(JSON.stringify(i), 'is empty or holds a NUL');
  if (i.includes('\\') || ENCODED.test(i)) throw outside(i, 'holds a backslash or an encoded separator');
  if (path.isAbsolute(i)) throw outside(i, 'is absolute');
  // resolving would drop the slash and name the file before it: `a/` would write or read the file `a`
  if (i.endsWith('/')) throw invalidParams(`parameter i: ${i} ends with a slash, naming a folder; runtime files are files`);
  const rootReal = await fsp.realpath(root);
  const lexical = path.resolve(rootReal, i);
  if (!inside(rootReal, lexical)) throw outside(i, 'leads out of runtime/ (or names runtime/ itself)');

  const rest: string[] = [];
  let probe = lexical;
  let real: string;
  for (;;) {
    try {
      real = await fsp.realpath(probe);
      break;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTDIR') throw invalidParams(`parameter i: a part of ${i} is a file, not a folder`);
      if (code === 'ELOOP') throw outside(i, 'has a loop of symbolic links');
      if (code !== 'ENOENT') throw err;
      // missing, unless it is a link whose target is missing: that target cannot be checked
      if (await fsp.lstat(probe).then(() => true, () => false)) throw outside(i, 'is a symbolic link to a missing target');
      rest.unshift(path.basename(probe));
      probe = path.dirname(probe);
    }
  }
  const final = path.join(real, ...rest);
  if (!inside(rootReal, final)) throw outside(i, 'leads out of runtime/ through a symbolic link');
  return { rel: path.relative(rootReal, lexical).split(path.sep).join('/'), real: final, exists: rest.length === 0 };
}
