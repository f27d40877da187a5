import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { Keys, startController } from '../helpers/controller';
import { WriteHold } from '../../core/toolkit/group-commit';

/**
 * Write holds are a controller's own: a JSON RPC batch of one controller
 * holds back that controller's writes, never those of another controller
 * in the same process (the tests and benchmarks run several). The hold is
 * taken here as a batch takes it, and kept on across event loop turns (a
 * batch's ends by itself once the loop moves on), so that a call to the
 * other controller can be made and answered while it is on.
 */

const k = Keys.master;
const instant = { ini: { server: { db_update: 'instant' } } };
const onDisk = (dir: string): Record<string, unknown> => {
  const file = path.join(dir, 'runtime', 'uc_cvars.json');
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown> : {};
};

/** A hold of `holds` that stays on until the returned function is called: each turn takes the next hold before ending the last. */
function holdAcrossTurns(holds: WriteHold): () => void {
  let on = true;
  let release: () => void;
  const renew = () => {
    if (!on) return;
    // queued before the new hold's own end (a setImmediate too): it runs first in the next turn
    setImmediate(renew);
    const last = release;
    release = holds.hold();
    last();
  };
  setImmediate(renew);
  release = holds.hold();
  return () => {
    on = false;
    release();
  };
}

/** `p`, or 'timed out' after `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<T | 'timed out'> {
  let timer: NodeJS.Timeout;
  const late = new Promise<'timed out'>((resolve) => { timer = setTimeout(() => resolve('timed out'), ms); });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

test('a write hold on one controller does not hold back the writes of another in the same process', async (t) => {
  const a = await startController(t, instant);
  const b = await startController(t, instant);
  const stopHolding = holdAcrossTurns(a.ctl.get(WriteHold));
  t.teardown(stopHolding);

  // A's own write waits for the hold: its value is in memory, its answer and the file wait
  let aAnswered = false;
  const aWrite = a.client.ok('set_cvar', { k, i: 'x', v: 'a' }).then((r: unknown) => { aAnswered = true; return r; });
  for (;;) {
    if ((await a.client.rpc('get_cvar', { k, i: 'x' })).result?.x === 'a') break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }

  // B writes and answers meanwhile (generous: the machine may be busy; a held write would never answer while the hold is on)
  t.deepEqual(await within(b.client.ok('set_cvar', { k, i: 'x', v: 'b' }), 30_000), { ok: true });
  t.is(onDisk(b.dir).x, 'b', "B's change is on disk");
  t.false(aAnswered, "A's write is still held");
  t.false('x' in onDisk(a.dir), "A's change is not on disk yet");

  stopHolding();
  t.deepEqual(await aWrite, { ok: true });
  t.is(onDisk(a.dir).x, 'a');
});
