import fs from 'node:fs';
import path from 'node:path';
import { tempWriter } from './atomic-file';

/** Most folder entries one sweep looks at: a huge runtime/ must not hold up the start for long. */
const MAX_ENTRIES = 200_000;

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
 * Remove the temp files that writers killed in the middle of an atomic write
 * left anywhere under `root` (items, cvars, user db, notifier files, history,
 * file_put): written, never renamed, they hold nothing the real files lack.
 * Those of a running process, this one included, are left alone: they may
 * be a write under way (the notifier command line tool writes beside a
 * running controller). Symbolic links are not followed. Returns how many were
 * removed.
 */
export function sweepTemps(root: string): number {
  let removed = 0;
  let seen = 0;
  const folders = [root];
  while (folders.length && seen < MAX_ENTRIES) {
    const dir = folders.pop()!;
    let entries: fs.Dirent[];
    try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { continue; }
    for (const e of entries) {
      if (++seen > MAX_ENTRIES) break;
      const full = path.join(dir, e.name);
      if (e.isDirectory()) { folders.push(full); continue; }
      const pid = e.isFile() ? tempWriter(e.name) : undefined;
      if (pid === undefined || pid === process.pid || alive(pid)) continue;
      try { fs.rmSync(full, { force: true }); removed++; } catch { /* left for the next start */ }
    }
  }
  return removed;
}
