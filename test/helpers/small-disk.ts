import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import type { ExecutionContext } from 'ava';

/** Mounting a file system needs root; elsewhere the test is skipped, saying why. */
export const root = process.getuid?.() === 0;

/** A small tmpfs at `dir`, unmounted when the test ends (after the controller stopped: teardowns run last first). */
export function mountSmall(t: ExecutionContext, dir: string, size: string): void {
  fs.mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
  t.teardown(() => { try { execFileSync('umount', ['-l', dir]); } catch { /* already gone */ } });
}

/** Fill the file system of `dir` to the last byte; returns the filler file. */
export function fill(dir: string): string {
  const filler = path.join(dir, 'filler');
  const fd = fs.openSync(filler, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) {
      try {
        fs.writeSync(fd, chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
        // the last partial chunk: write what still fits, byte by byte down to nothing
        for (let n = chunk.length >> 1; n > 0; n >>= 1) {
          try { fs.writeSync(fd, chunk, 0, n); n <<= 1; } catch { /* smaller */ }
        }
        return filler;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

