import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { spawnController, makeDir, Keys, type Client } from '../helpers/controller';
import { until } from '../helpers/wait';
import { readItemsState } from '../helpers/items-file';

const k = Keys.master;
const ROUNDS = 20;
/** item writers (one sensor each), cvar writers, runtime file writers */
const SENSORS = 4;
const CVARS = 2;
const FILES = 2;

/** One stream of writes: the last value the controller acknowledged, and the one in flight when it died. */
interface Stream { name: string; acked: number; sent: number }

/**
 * Call `write(v)` with v = start, start+1, … one after the other until the
 * controller dies. An error answer is a real failure (thrown); a broken
 * connection is the end of the round.
 */
async function run(s: Stream, start: number, write: (v: number) => Promise<{ error?: { message: string } }>): Promise<void> {
  for (let v = start; ; v++) {
    s.sent = v;
    let r: { error?: { message: string } };
    try {
      r = await write(v);
    } catch {
      return; // the controller was killed
    }
    if (r.error) throw new Error(`${s.name} = ${v}: ${r.error.message}`);
    s.acked = v;
  }
}

/** Every temp file under `dir` (they start with a dot and end with .tmp). */
function temps(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => path.basename(f).startsWith('.') && f.endsWith('.tmp'));
}

test('SIGKILL during streams of acknowledged updates, set_cvar and file_put (db_update instant): every acknowledged change is on disk; temp files are swept at start', async (t) => {
  t.timeout(600_000);
  const dir = makeDir(t, { ini: { server: { db_update: 'instant' }, sysapi: { file_management: 'yes' } } });
  const runtime = path.join(dir, 'runtime');
  const itemsFile = path.join(runtime, 'uc_items.json');
  const cvarsFile = path.join(runtime, 'uc_cvars.json');
  const sensors: Stream[] = Array.from({ length: SENSORS }, (_, i) => ({ name: `sensor:g/s${i}`, acked: 0, sent: 0 }));
  const cvars: Stream[] = Array.from({ length: CVARS }, (_, i) => ({ name: `c${i}`, acked: 0, sent: 0 }));
  const files: Stream[] = Array.from({ length: FILES }, (_, i) => ({ name: `f/w${i}.txt`, acked: 0, sent: 0 }));
  let acknowledged = 0;
  let leftAtKill = 0;

  /** What is on disk matches each stream: the acknowledged value or the one in flight, never older; then continue from it. */
  const check = (round: number, s: Stream, disk: number | undefined) => {
    if (!s.acked) return;
    t.true(disk === s.acked || disk === s.sent, `round ${round}: ${s.name} on disk ${disk}, acknowledged ${s.acked}, in flight ${s.sent}`);
    s.acked = disk ?? s.acked;
  };

  for (let round = 0; round < ROUNDS; round++) {
    const child = await spawnController(t, dir, [], 60_000);
    // the start swept what the kill left
    t.deepEqual(temps(runtime), [], `round ${round}: temp files after the start`);
    const c: Client = child.client;
    if (round === 0) for (const s of sensors) await c.ok('create', { k, i: s.name });
    const before = [...sensors, ...cvars, ...files].reduce((n, s) => n + s.acked, 0);
    const runs = [
      ...sensors.map((s) => run(s, s.acked + 1, (v) => c.rpc('update', { k, i: s.name, v: String(v) }))),
      ...cvars.map((s) => run(s, s.acked + 1, (v) => c.rpc('set_cvar', { k, i: s.name, v: String(v) }))),
      ...files.map((s) => run(s, s.acked + 1, (v) => c.rpc('file_put', { k, i: s.name, m: String(v) }))),
    ];
    // kill at a random moment once every stream has written (on a busy machine the first writes take a while)
    const all = [...sensors, ...cvars, ...files];
    const started = all.map((s) => s.acked);
    await until('every stream writing', () => all.every((s, n) => s.acked !== started[n]), 30_000);
    await new Promise((r) => setTimeout(r, 100 + Math.random() * 500));
    child.proc.kill('SIGKILL');
    await child.exited;
    await Promise.all(runs);
    acknowledged += [...sensors, ...cvars, ...files].reduce((n, s) => n + s.acked, 0) - before;
    leftAtKill += temps(runtime).length;

    // read the moment the process is gone
    const { items } = readItemsState(itemsFile); // the file and its journal
    for (const s of sensors) check(round, s, items[s.name] ? Number(items[s.name].value) : undefined);
    const vars = fs.existsSync(cvarsFile) ? JSON.parse(fs.readFileSync(cvarsFile, 'utf8')) : {};
    for (const s of cvars) check(round, s, vars[s.name] === undefined ? undefined : Number(vars[s.name]));
    for (const s of files) {
      const f = path.join(runtime, s.name);
      check(round, s, fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8')) : undefined);
    }
  }
  t.log(`${acknowledged} acknowledged changes over ${ROUNDS} kills; the kills left ${leftAtKill} temp files, all swept at the next start`);
  t.true(acknowledged > ROUNDS * (SENSORS + CVARS + FILES), `${acknowledged} changes acknowledged`);

  // the last kill's leftovers go too
  const child = await spawnController(t, dir, [], 60_000);
  t.deepEqual(temps(runtime), []);
  const state = await child.client.ok('state', { k, i: sensors[0].name });
  t.is(Number(state.value), sensors[0].acked);
  child.proc.kill('SIGKILL');
  await child.exited;
});
