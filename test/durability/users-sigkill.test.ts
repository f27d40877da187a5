import test from 'ava';
import { makeDir, spawnController, Keys, type Client } from '../helpers/controller';

const ROUNDS = 5;
const STREAMS = 2;
const m = { k: Keys.master };

/** What the test knows of one user: the key it was last acknowledged with, and a change in flight at the kill. */
interface Known { key?: string; destroyed?: boolean; pending?: string | 'destroy' }

/**
 * One writer of user accounts: creates a user, moves it to another key and
 * destroys every third one, call after call, until the controller dies.
 * An error answer is a real failure (thrown); a broken connection ends the round.
 */
async function stream(client: Client, prefix: string, known: Map<string, Known>): Promise<void> {
  for (let n = 0; ; n++) {
    const u = `${prefix}n${n}`;
    const steps: [string, Record<string, unknown>, Known['pending'], Known][] = [
      ['create_user', { u, p: `secret-${u}`, a: 'ops' }, 'ops', { key: 'ops' }],
      ['set_user_key', { u, a: 'plain' }, 'plain', { key: 'plain' }],
      ...(n % 3 === 0 ? [['destroy_user', { u }, 'destroy', { destroyed: true }] as [string, Record<string, unknown>, Known['pending'], Known]] : []),
    ];
    for (const [fn, params, pending, done] of steps) {
      known.set(u, { ...(known.get(u) ?? {}), pending });
      let r: { error?: { message: string } };
      try {
        r = await client.rpc(fn, { ...m, ...params });
      } catch {
        return; // the controller was killed
      }
      if (r.error) throw new Error(`${fn} ${u}: ${r.error.message}`);
      known.set(u, done);
    }
  }
}

/**
 * Issue 10 item 4: under db_update = instant an acknowledged change of a user
 * survives SIGKILL (the user db writes through the same group commit as keys;
 * test/durability/userdb.test.ts covers keys).
 */
test('SIGKILL during streams of create_user, set_user_key and destroy_user (db_update instant): every acknowledged user change survives', async (t) => {
  t.timeout(600_000);
  const dir = makeDir(t, { ini: { server: { db_update: 'instant' } } });
  const known = new Map<string, Known>();
  let acknowledged = 0;
  for (let round = 0; round <= ROUNDS; round++) {
    const child = await spawnController(t, dir, [], 60_000);
    // what the previous round acknowledged is what the controller loaded
    const users = new Map<string, string>((await child.client.ok('list_users', m)).map((x: any) => [x.user, x.key_id]));
    for (const [u, k] of known) {
      if (k.pending !== undefined) {
        // in flight at the kill: the state before it or after it, nothing else
        const before = k.pending === 'ops' ? undefined : k.pending === 'plain' ? 'ops' : 'plain';
        const after = k.pending === 'destroy' ? undefined : k.pending;
        t.true(users.get(u) === before || users.get(u) === after, `round ${round}: ${u} has ${users.get(u)}, in flight ${k.pending}`);
        known.set(u, users.has(u) ? { key: users.get(u) } : { destroyed: true });
      } else if (k.destroyed) {
        t.false(users.has(u), `round ${round}: ${u} was destroyed`);
      } else {
        t.is(users.get(u), k.key, `round ${round}: ${u}`);
        acknowledged++;
      }
    }
    if (round === ROUNDS) {
      child.proc.kill('SIGTERM');
      await child.exited;
      break;
    }
    const streams = Array.from({ length: STREAMS }, (_, s) => stream(child.client, `r${round}s${s}`, known));
    // kill at a random moment once a user of this round is acknowledged for good (moved to its last key, not one
    // that is destroyed next): every later round checks it. Waited for, not timed: hashing makes create_user slow
    // on a busy machine
    const settled = () => [...known].some(([u, k]) => u.startsWith(`r${round}s`) && k.key === 'plain' && k.pending === undefined
      && Number(u.slice(u.lastIndexOf('n') + 1)) % 3 !== 0);
    for (const end = Date.now() + 300_000; !settled();) {
      if (Date.now() > end) throw new Error(`round ${round}: no user change acknowledged in 300 s`);
      await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, 300 + Math.floor(Math.random() * 1000)));
    child.proc.kill('SIGKILL');
    await child.exited;
    await Promise.all(streams);
  }
  t.log(`${acknowledged} acknowledged user states checked after ${ROUNDS} kills`);
  t.true(acknowledged >= ROUNDS, `${acknowledged} acknowledged user states checked`);
});
