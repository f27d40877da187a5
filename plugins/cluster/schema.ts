import type * as Pg from 'pg';
import { ApikeysColumns, KeyExpiresColumns, KeyExpiresTable, UsersColumns } from '../sysapi/contract';

/** The channel the trigger tells every change on. */
export const CHANNEL = 'eva_userdb';

/** Serializes schema changes between controllers starting at once (CREATE TABLE IF NOT EXISTS races otherwise). */
const SCHEMA_LOCK = 0x45564155;

/**
 * Our column widths where ours are longer than 3.3.2's: scrypt password
 * hashes (about 90 characters; 3.3.2 kept 64 hex digits of SHA-256) and key
 * values set with set_key_prop (up to 256). A table 3.3.2 made is widened;
 * 3.3.2 reads the wider columns as before.
 */
const Wider: Record<string, Record<string, number>> = { apikeys: { k: 256 }, users: { p: 256 } };

/**
 * Every change of a row, whoever makes it (this project, EVA ICS 3.3.2,
 * psql), is told on CHANNEL at commit by a trigger: `{t, id}`.
 */
const TRIGGER_FUNCTION = `CREATE OR REPLACE FUNCTION eva_userdb_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  t text := CASE TG_TABLE_NAME WHEN 'apikeys' THEN 'k' ELSE 'u' END;
  col text := CASE TG_TABLE_NAME WHEN 'apikeys' THEN 'k_id' ELSE 'u' END;
  old_id text;
  new_id text;
BEGIN
  IF TG_OP <> 'INSERT' THEN old_id := to_jsonb(OLD) ->> col; END IF;
  IF TG_OP <> 'DELETE' THEN new_id := to_jsonb(NEW) ->> col; END IF;
  IF new_id IS NOT NULL THEN PERFORM pg_notify('${CHANNEL}', json_build_object('t', t, 'id', new_id)::text); END IF;
  IF old_id IS NOT NULL AND old_id IS DISTINCT FROM new_id THEN
    PERFORM pg_notify('${CHANNEL}', json_build_object('t', t, 'id', old_id)::text);
  END IF;
  RETURN NULL;
END $$`;

/** What the tables turned out to be. */
export interface SchemaState {
  /** users.p could not be widened (a 3.3.2 controller holds the table): longer hashes do not fit */
  narrowPasswords: boolean;
}

/**
 * How long a schema change may wait for a table. EVA ICS 3.3.2 leaves its
 * connections idle inside a transaction after a read, holding the tables: a
 * column change would wait for ever, and every statement 3.3.2 sends after
 * it would queue behind it, stopping the 3.3.2 controller too.
 */
const LOCK_TIMEOUT = '2s';

/**
 * Make the tables (3.3.2's columns, ours wider where noted), add missing
 * columns, and the trigger; under a lock. A column that cannot be widened
 * now (its table held by 3.3.2) stays as it is: tried again at the next
 * connection, and said in what this returns.
 */
export async function ensureSchema(c: Pg.ClientBase, log: { warning(m: string): void }): Promise<SchemaState> {
  const state: SchemaState = { narrowPasswords: false };
  await c.query('BEGIN');
  try {
    await c.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
    await c.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
    for (const [table, columns] of [['apikeys', ApikeysColumns], ['users', UsersColumns]] as const) {
      const wide = ([n, t]: [string, string]): string => (Wider[table][n] ? t.replace(/\(\d+\)/, `(${Wider[table][n]})`) : t);
      await c.query(`CREATE TABLE IF NOT EXISTS ${table} (${columns.map(([n, t]) => `${n} ${wide([n, t])}`).join(', ')}, PRIMARY KEY (${columns[0][0]}))`);
      const have = await c.query<{ column_name: string; len: number | null }>(
        `SELECT column_name, character_maximum_length AS len FROM information_schema.columns
         WHERE table_schema = current_schema() AND table_name = $1`, [table]);
      const len = new Map(have.rows.map((r) => [r.column_name, r.len]));
      for (const [n, t] of columns) {
        if (!len.has(n)) await c.query(`ALTER TABLE ${table} ADD COLUMN ${n} ${wide([n, t]).replace(' NOT NULL', '')}`);
        else if (Wider[table][n] && (len.get(n) ?? Infinity) < Wider[table][n]) {
          await c.query('SAVEPOINT widen');
          try {
            await c.query(`ALTER TABLE ${table} ALTER COLUMN ${n} TYPE VARCHAR(${Wider[table][n]})`);
          } catch (err) {
            if ((err as { code?: string }).code !== '55P03') throw err;
            await c.query('ROLLBACK TO SAVEPOINT widen');
            log.warning(`user db: ${table}.${n} stays ${len.get(n)} characters wide: the table is held by another program (an EVA ICS 3.3.2 controller keeps a transaction open); widened at a later connection`);
            if (table === 'users' && n === 'p') state.narrowPasswords = true;
          }
        }
      }
    }
    // when dynamic keys expire: our table, apikeys keeps 3.3.2's columns (plugins/sysapi/userdb.ts)
    await c.query(`CREATE TABLE IF NOT EXISTS ${KeyExpiresTable} (${KeyExpiresColumns.map(([n, t]) => `${n} ${t}`).join(', ')}, PRIMARY KEY (${KeyExpiresColumns[0][0]}))`);
    await c.query(TRIGGER_FUNCTION);
    for (const table of ['apikeys', 'users']) {
      const has = await c.query("SELECT 1 FROM pg_trigger WHERE tgname = 'eva_userdb_notify' AND tgrelid = $1::regclass", [table]);
      if (!has.rows.length) await c.query(`CREATE TRIGGER eva_userdb_notify AFTER INSERT OR UPDATE OR DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION eva_userdb_notify()`);
    }
    await c.query('COMMIT');
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
  return state;
}
