import type { ExecutionContext } from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { History, type HistoryOptions } from '../../plugins/notifiers/db/history';
import type { ModuleLogger } from '../../core/log';

/** What the db notifier tests share: outside readers, a history with test settings, waiting. */

export const run = promisify(execFile);

/** Rows of a query through the sqlite3 tool, read-only, as lines of `|`-separated text. */
export async function sqlite3Lines(file: string, sql: string): Promise<string[]> {
  const { stdout } = await run('sqlite3', ['-readonly', file, sql], { timeout: 30_000 });
  return stdout.split('\n').filter((l) => l !== '');
}

const PY_READ = `
import sqlite3, sys, json
c = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)
print(json.dumps(c.execute(sys.argv[2]).fetchall()))
`;

/** Rows through Python's sqlite3 module. */
export async function python(file: string, sql: string): Promise<unknown[][]> {
  const { stdout } = await run('python3', ['-c', PY_READ, file, sql], { timeout: 30_000 });
  return JSON.parse(stdout);
}

/** A logger that keeps what it is told, so tests can check warnings. */
export function keepingLog(): ModuleLogger & { lines: string[] } {
  const lines: string[] = [];
  const log = (l: number, m: string) => { lines.push(`${l} ${m}`); };
  return {
    lines, log,
    debug: (m) => log(10, m), info: (m) => log(20, m), warning: (m) => log(30, m),
    error: (m) => log(40, m), critical: (m) => log(50, m),
  };
}

export function tmpDir(t: ExecutionContext): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hist-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function history(t: ExecutionContext, opts: Partial<HistoryOptions> & { file: string }, log = keepingLog()): History {
  const h = new History({
    space: '', keep: 86400, maxRows: 1_000_000, maxBytes: 1 << 30, flushInterval: 0.2, flushPauseFactor: 4, cleanInterval: 60, maxPending: 16,
    // a budget that never holds a checkpoint back: these tests are about the flush interval
    maxWriteBytesPerHour: 1e15, journalShare: 0.5, journalFloor: 4 << 20, commitInterval: 0, commitRows: 1, ...opts,
  }, log);
  t.teardown(() => h.stop().catch(() => undefined));
  return h;
}

export const now = () => Date.now() / 1000;
export { sleep } from './wait';

