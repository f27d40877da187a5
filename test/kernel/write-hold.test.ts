import test from 'ava';
import { GroupCommit, WriteHold } from '../../core/toolkit/group-commit';

/**
 * Write holds (WriteHold): a group commit's next write waits while a hold
 * of its holds is on, then carries everything asked for meanwhile; a hold
 * ends by itself once the event loop moves on, and a store with a full
 * write's worth waiting writes anyway. Each test has holds of its own.
 */

/** Microtask turns, as many `await`s between the calls of a batch make. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await Promise.resolve();
}

/** A group commit over a counted, instant write, made with `holds`. */
function counted(holds: WriteHold, full?: () => boolean) {
  const writes: number[] = [];
  let changes = 0;
  const g = new GroupCommit(holds, async () => {
    writes.push(changes);
    changes = 0;
  }, full);
  const change = () => {
    changes++;
    return g.request();
  };
  return { writes, change, pending: () => changes };
}

test('a held write waits for the hold to end, however many turns pass between the changes, then one write carries them all', async (t) => {
  const holds = new WriteHold();
  const { writes, change } = counted(holds);
  const release = holds.hold();
  const answers: Promise<void>[] = [];
  for (let i = 0; i < 100; i++) {
    answers.push(change());
    await turns(5);
  }
  t.deepEqual(writes, [], 'nothing written while held');
  release();
  await Promise.all(answers);
  t.deepEqual(writes, [100], 'one write for the hundred changes');
  // without a hold, the same turns let the first change go alone
  const answersAfter: Promise<void>[] = [];
  for (let i = 0; i < 3; i++) {
    answersAfter.push(change());
    await turns(5);
  }
  await Promise.all(answersAfter);
  t.deepEqual(writes, [100, 1, 1, 1]);
});

test('holds nest: the write starts when the last one ends; ending a hold twice counts once', async (t) => {
  const holds = new WriteHold();
  const { writes, change } = counted(holds);
  const a = holds.hold();
  const b = holds.hold();
  const done = change();
  a();
  a();
  await turns(20);
  t.deepEqual(writes, [], 'b still holds');
  b();
  await done;
  t.deepEqual(writes, [1]);
});

test('a hold nobody ends ends by itself once the event loop moves on', async (t) => {
  const holds = new WriteHold();
  const { writes, change } = counted(holds);
  holds.hold(); // never released
  const done = change();
  await turns(50);
  t.deepEqual(writes, []);
  await done; // resolves: the hold ended by itself (setImmediate)
  t.deepEqual(writes, [1]);
});

test('a store with a full write\'s worth waiting writes while held', async (t) => {
  let bound = 3;
  const holds = new WriteHold();
  const c = counted(holds, () => c.pending() >= bound);
  const release = holds.hold();
  const answers: Promise<void>[] = [];
  for (let i = 0; i < 7; i++) {
    answers.push(c.change());
    await turns(5);
  }
  // 3 went as soon as they were a full write; 3 more as well, while the first write was done at once; 1 waits
  t.deepEqual(c.writes, [3, 3]);
  t.true(answers.every((a) => a instanceof Promise), 'every change has its write to wait for');
  bound = Infinity;
  release();
  await Promise.all(answers);
  t.deepEqual(c.writes, [3, 3, 1]);
});

test('a hold holds back only the group commits made with its holds', async (t) => {
  const held = new WriteHold();
  const other = new WriteHold();
  const a = counted(held);
  const b = counted(other);
  const release = held.hold();
  const waiting = a.change();
  await b.change(); // written although a hold of another WriteHold is on
  t.deepEqual(b.writes, [1]);
  t.deepEqual(a.writes, [], 'still held');
  release();
  await waiting;
  t.deepEqual(a.writes, [1]);
});
