import fs from 'node:fs';
import { ApiKey, ApiKeyProps, KeyListField, splitList } from '../../core/auth/apikey';
import { SqliteFile } from '../../core/toolkit/sqlite-file';
import type { WriteHold } from '../../core/toolkit/group-commit';

/**
 * Columns of table `apikeys` that hold a key's lists (plugins/sysapi/README.md, "API
 * keys"), comma-joined, as EVA ICS 3.3 wrote them.
 */
const ListColumns: Record<string, KeyListField> = {
  i: 'items', g: 'groups', i_ro: 'items_ro', g_ro: 'groups_ro', i_deny: 'items_deny', g_deny: 'groups_deny',
  a: 'allow', hal: 'hosts_allow', has: 'hosts_assign', pvt: 'pvt', rpvt: 'rpvt', cdata: 'cdata',
};

/** Column types as EVA ICS 3.3 declared them, so either program reads the other's file. */
export const ApikeysColumns: [string, string][] = [
  ['k_id', 'VARCHAR(64) NOT NULL'], ['k', 'VARCHAR(64)'], ['m', 'INTEGER'], ['s', 'INTEGER'],
  ['i', 'VARCHAR(8192)'], ['g', 'VARCHAR(8192)'], ['i_ro', 'VARCHAR(8192)'], ['g_ro', 'VARCHAR(8192)'],
  ['i_deny', 'VARCHAR(8192)'], ['g_deny', 'VARCHAR(8192)'], ['a', 'VARCHAR(256)'], ['hal', 'VARCHAR(8192)'],
  ['has', 'VARCHAR(8192)'], ['pvt', 'VARCHAR(8192)'], ['rpvt', 'VARCHAR(8192)'], ['cdata', 'VARCHAR(16384)'],
];
/**
 * When dynamic keys expire: a table of ours beside EVA ICS 3.3's (whose
 * apikeys table has no such column, and in a PostgreSQL database 3.3.2
 * shares must keep its columns). A key without an expiry has no row. In a
 * SQLite file the table is made with the first key that expires, so a file
 * 3.3 made stays as it was until then.
 */
export const KeyExpiresTable = 'eva_key_expires';
export const KeyExpiresColumns: [string, string][] = [['k_id', 'VARCHAR(64) NOT NULL'], ['expires', 'DOUBLE PRECISION']];
/** Every key row with its expiry (null: none), as keyOfRow reads it; a WHERE or ORDER BY may follow. */
export const KEYS_SELECT = `SELECT apikeys.*, ${KeyExpiresTable}.expires AS expires FROM apikeys LEFT JOIN ${KeyExpiresTable} ON ${KeyExpiresTable}.k_id = apikeys.k_id`;

export const UsersColumns: [string, string][] = [['u', 'VARCHAR(64) NOT NULL'], ['p', 'VARCHAR(64)'], ['k', 'VARCHAR(2048)']];

/** A user account as stored: `keys` is the key id (a comma list in files of the old system). */
export interface UserRecord { user: string; password: string; keys: string[] }

const text = (v: unknown) => (v === null || v === undefined ? '' : String(v));

/**
 * How `mcp = write` is kept in a row: 3.3.2's table has no column for it
 * and gets none (a 3.3.2 controller sharing the table must read it as it
 * wrote it), so it rides in the allow column `a` as one more value,
 * which 3.3.2 reads past (it asks the list for cmd, lock, device only).
 */
const McpWrite = 'mcp:write';

/** A row of table `apikeys` as the properties of a dynamic key (a row may still hold a bad network: ApiKey checks). */
export function keyOfRow(r: Record<string, unknown>): ApiKeyProps {
  const lists: Partial<Record<KeyListField, string[]>> = Object.fromEntries(Object.entries(ListColumns).map(([col, field]) => [field, splitList(text(r[col]))]));
  const allow = lists.allow ?? [];
  return {
    id: text(r.k_id),
    key: text(r.k),
    sysfunc: Number(r.s) === 1 || /^(true|yes|1)$/i.test(text(r.s)),
    dynamic: true,
    mcp: allow.includes(McpWrite) ? 'write' : 'read',
    lists: { ...lists, allow: allow.filter((a) => a !== McpWrite) },
    // checked where the key is made (parseExpires): a value that is no time skips the key
    ...(r.expires === null || r.expires === undefined ? {} : { expires: Number(r.expires) }),
  };
}

/** The columns of table `apikeys` and a key's values for them, as EVA ICS 3.3 wrote them. */
export function rowOfKey(key: ApiKey): { cols: string[]; values: (string | number)[] } {
  return {
    cols: ['k_id', 'k', 'm', 's', ...Object.keys(ListColumns)],
    values: [key.id, key.key, 0, key.sysfunc ? 1 : 0, ...Object.values(ListColumns).map((f) => columnOf(key, f))],
  };
}

/** A list column's text; `allow` carries mcp = write (McpWrite). */
function columnOf(key: ApiKey, f: KeyListField): string {
  if (f === 'allow' && key.mcp === 'write') return [...key.lists.allow, McpWrite].join(',');
  return key.lists[f].join(',');
}

/** A row of table `users`. */
export function userOfRow(r: Record<string, unknown>): UserRecord {
  return { user: text(r.u), password: text(r.p), keys: splitList(text(r.k)) };
}

/**
 * Where dynamic keys and user accounts are kept: this controller's SQLite
 * file (UserDb), or a database several controllers share (plugins/cluster).
 * change() runs `sync`, which says with put/delete what the rows become, and
 * resolves once they are stored; when they cannot be, `undo` takes the
 * caller's change back out of memory and change() rejects.
 */
export interface KeyUserStore {
  /** where it is, for messages (no password) */
  readonly file: string;
  change(sync: () => void, undo?: () => void): Promise<void>;
  keys(): ApiKeyProps[];
  users(): UserRecord[];
  putKey(key: ApiKey): void;
  deleteKey(id: string): void;
  putUser(u: UserRecord): void;
  deleteUser(user: string): void;
}

/**
 * The user db runtime/db/<product>.db: dynamic API keys and user accounts in
 * an SQLite 3 file with the schema of EVA ICS 3.3. Changes are made in memory
 * and reach the file with change() (atomically, the whole file).
 *
 * A controller without the file has no keys or users to read: the file, and
 * the SQLite engine (sql.js, about 20 MB of WASM memory), wait for the first
 * change, so a controller that never creates a key or a user never loads them.
 *
 * It belongs to this plugin, not the kernel: the kernel checks keys and
 * tokens against the keys it holds (core/auth/keys.ts); this plugin adds the
 * user db's keys there and keeps the file following them (keys.ts,
 * dynamic-keys.ts), and logins and accounts are its functions.
 */
export class UserDb implements KeyUserStore {
  /** true when opening created a table or added columns: the file should be written */
  schemaChanged = false;
  /** counts changes made through change(): work done on a copy of the database knows whether it is still current */
  generation = 0;
  private store?: SqliteFile;
  private opening?: Promise<SqliteFile>;

  private constructor(readonly file: string, private readonly holds: WriteHold) {}

  /** Open the file when it exists (making sure both tables and every column exist); else wait for the first change. */
  static async open(file: string, holds: WriteHold): Promise<UserDb> {
    const db = new UserDb(file, holds);
    if (fs.existsSync(file)) await db.ready();
    return db;
  }

  /** The database, opened on first use (the file is made by the next change); a failed open is tried again by the next call. */
  ready(): Promise<SqliteFile> {
    this.opening ??= SqliteFile.open(this.file, this.holds, 0o600).then((store) => {
      this.store = store;
      this.ensure('apikeys', ApikeysColumns);
      this.ensure('users', UsersColumns);
      return store;
    }, (err: unknown) => {
      this.opening = undefined;
      throw err;
    });
    return this.opening;
  }

  private get db(): SqliteFile {
    if (!this.store) throw new Error(`user db ${this.file} is not open`);
    return this.store;
  }

  /**
   * Make rows follow memory (`sync`) and write the file; resolves once it is
   * on disk. `undo` takes the caller's change back out of memory when the
   * file cannot be opened or written; the rows then follow memory again
   * (see AtomicFile.write).
   */
  async change(sync: () => void, undo?: () => void): Promise<void> {
    let store: SqliteFile;
    try {
      store = await this.ready();
    } catch (err) {
      undo?.();
      throw err;
    }
    this.generation++;
    sync();
    await store.write(undo && (() => { undo(); this.generation++; sync(); }));
  }

  /**
   * The open database, for a table another owner keeps in the user db
   * (api_log); undefined until opened (change() opens it).
   */
  get sqlite(): SqliteFile | undefined {
    return this.store;
  }

  /**
   * Create a table, or add the columns an older file lacks (files from
   * before items_deny etc.); with `index`, an index `<table>_<index>` on
   * that column too (also in a file made without it: EVA ICS 3.3's api_log).
   */
  ensure(table: string, columns: [string, string][], index?: string): void {
    const have = this.db.columns(table);
    if (have.length === 0) {
      const cols = columns.map(([n, t]) => `${n} ${t}`).join(', ');
      this.db.run(`CREATE TABLE ${table} (${cols}, PRIMARY KEY (${columns[0][0]}))`);
      this.schemaChanged = true;
    }
    for (const [n, t] of columns) {
      if (have.length === 0 || have.includes(n)) continue;
      this.db.run(`ALTER TABLE ${table} ADD COLUMN ${n} ${t.replace(' NOT NULL', '')}`);
      this.schemaChanged = true;
    }
    if (index !== undefined) this.db.run(`CREATE INDEX IF NOT EXISTS ${table}_${index} ON ${table} (${index})`);
  }

  /** Every stored key as the properties of a dynamic key (a row may still hold a bad network: ApiKey checks). */
  keys(): ApiKeyProps[] {
    if (!this.store) return [];
    const sql = this.hasExpires() ? `${KEYS_SELECT} ORDER BY apikeys.k_id` : 'SELECT * FROM apikeys ORDER BY k_id';
    return this.store.rows(sql).map(keyOfRow);
  }

  private hasExpires(): boolean {
    return this.db.columns(KeyExpiresTable).length > 0;
  }

  putKey(key: ApiKey): void {
    const { cols, values } = rowOfKey(key);
    this.db.run(`INSERT OR REPLACE INTO apikeys (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`, values);
    if (key.expires !== undefined) this.ensure(KeyExpiresTable, KeyExpiresColumns);
    if (!this.hasExpires()) return;
    this.db.run(`DELETE FROM ${KeyExpiresTable} WHERE k_id = ?`, [key.id]);
    if (key.expires !== undefined) this.db.run(`INSERT INTO ${KeyExpiresTable} (k_id, expires) VALUES (?, ?)`, [key.id, key.expires]);
  }

  deleteKey(id: string): void {
    this.db.run('DELETE FROM apikeys WHERE k_id = ?', [id]);
    if (this.hasExpires()) this.db.run(`DELETE FROM ${KeyExpiresTable} WHERE k_id = ?`, [id]);
  }

  users(): UserRecord[] {
    if (!this.store) return [];
    return this.store.rows('SELECT u, p, k FROM users ORDER BY u').map(userOfRow);
  }

  putUser(u: UserRecord): void {
    this.db.run('INSERT OR REPLACE INTO users (u, p, k) VALUES (?, ?, ?)', [u.user, u.password, u.keys.join(',')]);
  }

  deleteUser(user: string): void {
    this.db.run('DELETE FROM users WHERE u = ?', [user]);
  }

  /** Wait for every write asked for so far (none when the file was never opened). */
  async flush(): Promise<void> {
    await this.store?.flush();
  }

  close(): void {
    this.store?.close();
  }
}
