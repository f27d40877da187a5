import test from 'ava';
import { postgresUnavailable } from '../helpers/postgres';
import { check, runLocksSoak, type Grant, type Write } from '../soak/locks';

/**
 * The lock checker of `npm run soak -- locks` (test/soak/README.md), short:
 * three controllers as child processes on one PostgreSQL, clients taking
 * shared locks through all of them, one fault of each kind (SIGKILL and
 * restart of a controller, SIGSTOP past e, a PostgreSQL restart); no two
 * holds overlap, no stale write, tokens in order.
 */

const reason = postgresUnavailable();
if (reason) console.log(`PostgreSQL tests skipped: ${reason}`);
const pgtest = reason ? test.skip : test;

pgtest('shared locks under faults: no overlapping holds, no stale write, tokens in order', async (t) => {
  t.timeout(300_000);
  const r = await runLocksSoak({ grants: 300, faults: 3, seconds: 240, clients: 8, locks: 3, faultEvery: 1500, log: (l) => t.log(l) });
  t.log(JSON.stringify(r));
  t.true(r.grants >= 300, `${r.grants} grants`);
  t.is(Object.values(r.faults).reduce((a, b) => a + b, 0) >= 3, true, JSON.stringify(r.faults));
  t.is(Object.keys(r.faults).length, 3, 'one fault of each kind');
  t.is(r.overlaps, 0, r.examples.join('\n'));
  t.is(r.staleWrites, 0, r.examples.join('\n'));
  t.is(r.fenced, 0);
  t.is(r.tokenOrder, 0, r.examples.join('\n'));
  t.true(r.writes > 0);
});

test('the checker finds what it looks for: a hold overlapping another, a stale write, a token out of order or twice', (t) => {
  const judge = (grants: Grant[], writes: Write[] = []) => {
    const r = { overlaps: 0, staleWrites: 0, tokenOrder: 0, examples: [] as string[] };
    check(grants, writes, r);
    return r;
  };
  const g = (token: number, req: number, ack: number, unlockSent?: number): Grant => ({ lock: 'l', token, client: token, req, ack, e: 2, unlockSent });
  // one after the other: clean
  t.like(judge([g(1, 0, 10, 500), g(2, 400, 600, 900)], [{ lock: 'l', token: 1, at: 300 }, { lock: 'l', token: 2, at: 700 }]), { overlaps: 0, staleWrites: 0, tokenOrder: 0 });
  // an expiry ends a hold: the next grant after req + e - margin is no overlap, though the first never unlocked
  t.like(judge([g(1, 0, 10), g(2, 1000, 1950)]), { overlaps: 0 });
  // the second granted while the first held for certain
  t.like(judge([g(1, 0, 10, 500), g(2, 100, 200, 900)]), { overlaps: 1 });
  t.like(judge([g(1, 0, 10), g(2, 1000, 1500)]), { overlaps: 1 }, 'before the first one\'s lease ended');
  // a write with token 1 after token 2 was answered
  t.like(judge([g(1, 0, 10, 2000), g(2, 50, 100, 900)], [{ lock: 'l', token: 1, at: 150 }]), { staleWrites: 1 });
  // token 1 asked after token 2 was answered; token 3 twice
  t.like(judge([g(2, 0, 10, 20), g(1, 30, 40, 50)]), { tokenOrder: 1 });
  t.like(judge([g(3, 0, 10, 20), g(3, 30, 40, 50)]), { tokenOrder: 2 }, 'twice, and not larger than one answered before');
  // a grant answered after its lease (its controller was stopped past e) is no hold: the next grant may come at once
  t.like(judge([g(2, 0, 2500), g(3, 2400, 2600, 3000)]), { overlaps: 0 });
  t.like(judge([g(2, 0, 1500), g(3, 1400, 1600, 3000)]), { overlaps: 1 }, 'answered within its lease, it holds');
});
