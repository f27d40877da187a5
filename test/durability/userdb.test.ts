import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { makeDir, spawnController, startController, Keys, Client } from '../helpers/controller';
import { sqlite3, pySqlite, userDbOf } from '../helpers/accounts';
import { needs } from '../helpers/tools';
import { until } from '../helpers/wait';

const ROUNDS = 12;
const STREAMS = 3;

/** What the test knows of one key: its last acknowledged state, and a change that may or may not have landed. */
interface Known { groups?: string; destroyed?: boolean; pending?: string | 'destroy' }

/**
 * One writer: creates keys, sets a property, destroys every third key, one
 * call after another, until the controller dies. Records what each call's
 * answer acknowledged (and what was in flight when it died).
 */
async function stream(client: Client, prefix: string, known: Map<string, Known>): Promise<void> {
  const m = { k: Keys.master };
  for (let n = 0; ; n++) {
    const id = `${prefix}n${n}`;
    try {
      const created = await client.rpc('create_key', { ...m, i: id });
      if (created.error) throw new Error(`create_key ${id}: ${created.error.message}`);
      known.set(id, { groups: '' });
      for (let v = 0; v < 3; v++) {
        const value = `g${n}x${v}`;
        known.get(id)!.pending = value;
        const r = await client.rpc('set_key_prop', { ...m, i: id, p: 'groups', v: value });
        if (r.error) throw new Error(`set_key_prop ${id}: ${r.error.message}`);
        known.set(id, { groups: value });
      }
      if (n % 3 === 0) {
        known.get(id)!.pending = 'destroy';
        const r = await client.rpc('destroy_key', { ...m, i: id });
        if (r.error) throw new Error(`destroy_key ${id}: ${r.error.message}`);
        known.set(id, { destroyed: true });
      }
    } catch (err) {
      if ((err as Error).message.startsWith('create_key') || (err as Error).message.startsWith('set_key_prop') ||
          (err as Error).message.startsWith('destroy_key')) throw err; // an answer that is an error: a real failure
      return; // the connection died with the controller
    }
  }
}

/** Every acknowledged change is in the file; a change in flight at the kill is there or not, nothing else. */
function check(t: any, rows: Record<string, unknown>[], known: Map<string, Known>, reader: string, round: number): number {
  const byId = new Map(rows.map((r) => [String(r.k_id), r]));
  let checked = 0;
  for (const [id, k] of known) {
    const row = byId.get(id);
    const where = `${reader}, round ${round}, key ${id}`;
    if (k.destroyed) {
      t.is(row, undefined, where);
    } else if (k.pending === 'destroy') {
      if (row) t.is(row.g, k.groups, where);
    } else {
      t.truthy(row, `${where}: acknowledged key missing`);
      t.true(row?.g === k.groups || row?.g === k.pending, `${where}: groups ${row?.g}, acknowledged ${k.groups}`);
    }
    checked++;
  }
  return checked;
}

needs('sqlite3', 'python3')('user db: every acknowledged key change survives SIGKILL at random moments', async (t) => {
  t.timeout(600_000);
  const dir = makeDir(t, { ini: { server: { db_update: 'instant' } } });
  const file = userDbOf(dir);
  const known = new Map<string, Known>();
  let acknowledged = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const child = await spawnController(t, dir, [], 60_000);
    const sizeBefore = known.size;
    const streams = Array.from({ length: STREAMS }, (_, s) => stream(child.client, `r${round}s${s}`, known));
    // kill at a random moment once writes are flowing (on a busy machine the first ones take a while)
    await until('every stream writing', () => known.size >= sizeBefore + STREAMS, 30_000);
    await new Promise((r) => setTimeout(r, 150 + Math.floor(Math.random() * 600)));
    child.proc.kill('SIGKILL');
    await child.exited;
    await Promise.all(streams);

    t.true(fs.existsSync(file), `round ${round}: the user db exists`);
    t.deepEqual(sqlite3(file, 'PRAGMA integrity_check'), [{ integrity_check: 'ok' }], `round ${round}`);
    check(t, sqlite3(file, 'SELECT k_id, g FROM apikeys'), known, 'sqlite3', round);
    acknowledged = check(t, pySqlite(file, 'SELECT k_id, g FROM apikeys'), known, 'python3', round);
    const temps = fs.readdirSync(path.dirname(file)).filter((f) => f.endsWith('.tmp')).length;
    t.log(`round ${round}: ${[...known.values()].filter((k) => k.pending !== undefined).length} changes in flight at the kill, ${temps} temp files left`);
    // what was in flight is settled by what the file holds: the next round starts from it
    const rows = new Map(sqlite3(file, 'SELECT k_id, g FROM apikeys').map((r) => [String(r.k_id), String(r.g)]));
    for (const [id, k] of known) {
      if (k.pending === undefined) continue;
      known.set(id, rows.has(id) ? { groups: rows.get(id) } : { destroyed: true });
    }
  }
  t.true(acknowledged > ROUNDS * STREAMS, `${acknowledged} keys written across ${ROUNDS} kills`);
  t.log(`${acknowledged} keys checked after ${ROUNDS} kills`);

  // and the controller itself loads what survived, and clears the temp files killed writers left behind
  const { client } = await startController(t, { dir });
  const ids = new Set((await client.ok('list_keys', { k: Keys.master })).map((k: any) => k.key_id));
  for (const [id, k] of known) t.is(ids.has(id), !k.destroyed, id);
  t.deepEqual(fs.readdirSync(path.dirname(file)).filter((f) => f.endsWith('.tmp')), []);
});
