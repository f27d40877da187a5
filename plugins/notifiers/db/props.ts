import fs from 'node:fs';
import path from 'node:path';

/**
 * The db notifier's own fields: the history file and how long rows are kept.
 * Parsing and confinement live here so the command line (which never starts
 * the plugin) and the plugin read them the same way.
 */

/** `db:<file>[:keep]` without the `db:` prefix -> fields; throws a readable message when malformed. */
export function parseDbProps(props: string): { db: string; keep?: number } {
  // 3.3 took an SQLite file with or without SQLAlchemy's sqlite:/// prefix (sqlite:////abs for an absolute one)
  const text = props.trim().replace(/^sqlite:\/\/\//i, '');
  if (!text) throw new Error('db notifier props: expected <file>[:keep], got nothing');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text) && !/^postgres(ql)?:\/\//i.test(text)) {
    throw new Error('db notifier props: only an SQLite file in the controller folder or a postgresql:// URI is supported');
  }
  // the keep time is the last colon-separated part when it is a number; a file name may hold colons otherwise
  const m = /^(.*):([^:]*)$/.exec(text);
  if (m && /^\d+$/.test(m[2])) return { db: checkDbName(m[1]), keep: checkKeep(Number(m[2])) };
  if (m && m[2] !== '' && /^[\d.+-]+$/.test(m[2])) throw new Error(`db notifier props: keep must be a whole number of seconds, got ${m[2]}`);
  return { db: checkDbName(text) };
}

/** A file name that names a file, and, when relative, stays below the folder it is relative to. */
export function checkDbName(db: string): string {
  if (!db || db.endsWith('/')) throw new Error('db notifier: the database file name is missing');
  if (!path.isAbsolute(db) && path.normalize(db).split(path.sep)[0] === '..') {
    throw new Error(`db notifier: database file ${db} is outside the controller folder`);
  }
  return db;
}

export function checkKeep(keep: unknown): number {
  const n = typeof keep === 'string' && keep.trim() !== '' ? Number(keep) : keep;
  if (typeof n !== 'number' || !Number.isInteger(n) || n <= 0) throw new Error(`db notifier: keep must be a positive whole number of seconds, got ${String(keep)}`);
  return n;
}

/**
 * The absolute path of the history file. A relative name is read from the
 * controller folder, as EVA ICS 3.3 opened it (`history.db` is
 * `<folder>/history.db`; its own set-up wrote `runtime/db/history1.db`).
 * Earlier versions of this controller read a relative name from `runtime/`:
 * a file they made there is still opened there while the controller folder
 * holds none of that name, so no history is left behind. Whatever the name,
 * the result stays inside the controller folder (no `..`, no absolute path
 * elsewhere, no symlink leading out): a notifier file must not make the
 * controller write anywhere on the host.
 */
export function resolveDbFile(paths: { dir: string; runtime: string }, db: string): string {
  const root = path.resolve(paths.dir);
  const runtime = path.resolve(paths.runtime);
  // `..` is refused even where it would stay inside: which folder it starts from would matter
  checkDbName(db);
  let file = path.resolve(root, db);
  if (!path.isAbsolute(db) && !fs.existsSync(file)) {
    const earlier = path.resolve(runtime, db);
    if (earlier.startsWith(root + path.sep) && fs.existsSync(earlier)) file = earlier;
  }
  const outside = () => new Error(`db notifier: database file ${db} is outside the controller folder`);
  if (!file.startsWith(root + path.sep)) throw outside();
  // a symlinked folder (or file) must not lead out either: compare real paths of what exists
  if (!fs.existsSync(root)) return file;
  const realRoot = fs.realpathSync(root);
  let existing = file;
  while (!fs.existsSync(existing) && existing !== root) existing = path.dirname(existing);
  const real = fs.realpathSync(existing);
  if (real !== realRoot && !real.startsWith(realRoot + path.sep)) throw outside();
  return file;
}
