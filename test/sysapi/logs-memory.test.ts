import fs from 'node:fs';
import test from 'ava';
import { makeDir, spawnController, Keys } from '../helpers/controller';
import { LogApiDefaults } from '../../plugins/sysapi/logs';

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

test('64 concurrent log_get n=10000 on 16 KB records: bounded answers, bounded memory, test stays quick', async (t) => {
  const dir = makeDir(t, { ini: { server: { logmem_max_bytes: 64 * 1024 * 1024 } } });
  const child = await spawnController(t, dir);
  const pid = child.proc.pid!;
  const c = child.client;
  const m = { k: Keys.master };
  // fill the memory log: 16 KB records up to its 64 MiB
  const msg = 'r'.repeat(16_000);
  for (let i = 0; i < 4_200; i += 50) {
    const r = await fetch(`${child.url}/jrpc`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(Array.from({ length: 50 }, (_, j) => ({ jsonrpc: '2.0', id: j, method: 'log_info', params: { ...m, m: msg } }))),
    });
    await r.arrayBuffer();
  }
  // one answer: the newest records that fit the bound, not 10,000 of them
  const one = await c.ok('log_get', { ...m, n: 10_000 });
  const chars = one.reduce((s: number, r: any) => s + r.msg.length, 0);
  t.true(one.length > 1 && chars <= LogApiDefaults.max_answer, `${one.length} records, ${chars} characters`);
  t.is(one.at(-1).msg, msg, 'the newest record is in');

  const timeTest = async (n: number) => {
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await c.ok('test', m);
      times.push(performance.now() - t0);
    }
    return times;
  };
  const quiet = percentile(await timeTest(100), 0.99);
  const baseline = rssMiB(pid);
  let peak = baseline;
  const poll = setInterval(() => { peak = Math.max(peak, rssMiB(pid)); }, 20);
  let flooding = true;
  let answers = 0;
  let refused = 0;
  const flood = Array.from({ length: 64 }, async () => {
    while (flooding) {
      const r = await fetch(`${child.url}/sys-api/log_get?k=${Keys.master}&n=10000`);
      await r.arrayBuffer();
      if (r.status === 200) answers++;
      else if (r.status === 409) refused++;
      else t.fail(`log_get answered ${r.status}`);
      // a refused caller asks again soon, as a client would (not in a tight loop that only measures this machine)
      if (r.status === 409) await new Promise((res) => setTimeout(res, 20));
    }
  });
  await new Promise((r) => setTimeout(r, 300));
  const during = await timeTest(100);
  flooding = false;
  await Promise.all(flood);
  clearInterval(poll);
  const p99 = percentile(during, 0.99);
  t.log(`test p99: quiet ${quiet.toFixed(1)} ms, during ${answers} log_get answers (${refused} refused busy) ${p99.toFixed(1)} ms; RSS ${baseline.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB`);
  // unbounded, each answer was the whole 64 MiB log: 64 of them took the process to gigabytes
  t.true(peak - baseline < 400, `RSS grew by ${(peak - baseline).toFixed(0)} MiB`);
  // unbounded, each of the 64 answers blocked the loop for the whole 64 MiB log: a test call waited tens of
  // seconds. The limit is far below that and far above what a machine shared with other work adds (its quiet
  // p99 times 25, at least 5 s): a speed figure belongs to the benchmarks, this only catches the starvation
  const limit = Math.max(5_000, 25 * quiet);
  t.true(p99 < limit, `p99 ${p99.toFixed(1)} ms, limit ${limit.toFixed(0)} ms`);
});
