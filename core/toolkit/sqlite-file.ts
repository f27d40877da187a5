import fs from 'node:fs';
import type { Database, SqlJsStatic } from 'sql.js';
import { AtomicFile, writeFileAtomicSync } from './atomic-file';
import { WriteHold } from './group-commit';

export type { Database } from 'sql.js';

/*
 * The sql.js WASM module holds no data of its own (each Database is separate),
 * so one instance serves every controller of the process: it is compiled once.
 */
let engine: Promise<SqlJsStatic> | undefined;

/**
 * The sql.js engine, loaded on first use: its module and WASM instance cost
 * about 25 ms and 20 MB, which a controller using no SQLite file never pays.
 */
export function sqlJs(): Promise<SqlJsStatic> {
  engine ??= import('sql.js').then((m) => m.default()).catch((err) => {
    engine = undefined; // let a later call try again rather than keep a failed load forever
    throw err;
  });
  return engine;
}

/** Bytes 18 and 19 of an SQLite file: file format write/read versions; 2 means WAL. */
const FORMAT_OFFSET = 18;

/**
 * The bytes of an SQLite file as sql.js can open them. sql.js keeps the
 * database in memory and has no WAL support, so a file left in WAL mode by
 * another program is read as a rollback-journal file; a non-empty `-wal`
 * beside it would hold changes we cannot see, and is refused.
 */
function readableImage(file: string): Uint8Array {
  const data = new Uint8Array(fs.readFileSync(file));
  if (data.length > FORMAT_OFFSET + 1 && (data[FORMAT_OFFSET] === 2 || data[FORMAT_OFFSET + 1] === 2)) {
    const wal = `${file}-wal`;
    if (fs.existsSync(wal) && fs.statSync(wal).size > 0) {
      throw new Error(`${file} has un-checkpointed changes in ${wal}; run "sqlite3 ${file} 'PRAGMA wal_checkpoint'" first`);
    }
    data[FORMAT_OFFSET] = 1;
    data[FORMAT_OFFSET + 1] = 1;
  }
  return data;
}

/**
 * An SQLite database kept in memory by sql.js and written to its file as a
 * whole, atomically (core/toolkit/atomic-file.ts), so a crash leaves the previous
 * or the new file and any SQLite reader can open it at any time.
 */
export class SqliteFile {
  private readonly out: AtomicFile;

  private constructor(readonly file: string, private current: Database, readonly mode: number, private readonly engine: SqlJsStatic, holds: WriteHold) {
    this.out = new AtomicFile(file, holds, mode);
  }

  /** The database in memory. */
  get db(): Database {
    return this.current;
  }

  /** A database of `image` (a whole SQLite file's bytes) that belongs to no file: for work done on a copy (write() fails). */
  static async image(image: Uint8Array): Promise<SqliteFile> {
    const SQL = await sqlJs();
    // never written: holds of its own
    return new SqliteFile('', new SQL.Database(image), 0o600, SQL, new WriteHold());
  }

  /** Take `image` (a whole SQLite file's bytes, e.g. a copy changed elsewhere) as the database in memory. */
  replace(image: Uint8Array): void {
    const next = new this.engine.Database(image);
    this.current.close();
    this.current = next;
  }

  /** Open `file`, or start an empty database when it does not exist (written on the first write); `holds`: see AtomicFile. */
  static async open(file: string, holds: WriteHold, mode = 0o644): Promise<SqliteFile> {
    const SQL = await sqlJs();
    let db: Database;
    if (fs.existsSync(file)) {
      try {
        db = new SQL.Database(readableImage(file));
        db.exec('PRAGMA schema_version'); // sql.js opens lazily: make a damaged file fail here
      } catch (err) {
        throw new Error(`${file} is not a readable SQLite database: ${(err as Error).message}`);
      }
    } else {
      db = new SQL.Database();
    }
    return new SqliteFile(file, db, mode, SQL, holds);
  }

  /** Write the database as it is when the write starts; resolves once it is on disk (`undo`: see AtomicFile.write). */
  write(undo?: () => void): Promise<void> {
    return this.out.write(() => this.db.export(), undo);
  }

  /** Wait for every write asked for so far. */
  flush(): Promise<void> {
    return this.out.flush();
  }

  /** Write now, synchronously (process exit). */
  writeSync(): void {
    writeFileAtomicSync(this.file, this.db.export(), this.mode);
  }

  /** Rows of a query as objects. */
  rows(sql: string, params: (string | number | null)[] = []): Record<string, unknown>[] {
    const st = this.db.prepare(sql);
    try {
      st.bind(params);
      const out: Record<string, unknown>[] = [];
      while (st.step()) out.push(st.getAsObject());
      return out;
    } finally {
      st.free();
    }
  }

  /** Run one statement with parameters. */
  run(sql: string, params: (string | number | null)[] = []): void {
    this.db.run(sql, params);
  }

  /** Names of a table's columns (empty when the table does not exist). */
  columns(table: string): string[] {
    return this.rows(`PRAGMA table_info("${table.replace(/"/g, '""')}")`).map((r) => String(r.name));
  }

  close(): void {
    this.db.close();
  }
}
