import fs from 'node:fs';
import path from 'node:path';

/** Programs from outside npm, found on PATH (no ava here: scripts under test/ use it too). */

/** The full path of `program` found on PATH, or undefined. */
export function which(program: string): string | undefined {
  if (program.includes('/')) return isExecutable(program) ? program : undefined;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, program);
    if (isExecutable(p)) return p;
  }
  return undefined;
}

function isExecutable(p: string): boolean {
  try {
    return fs.statSync(p).isFile() && (fs.accessSync(p, fs.constants.X_OK), true);
  } catch {
    return false;
  }
}

/** The programs of `programs` that cannot be found. */
export function missing(...programs: string[]): string[] {
  return programs.filter((p) => !which(p));
}
