import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { CALLS, SETUP, TRANSPORTS } from './calls';
import { compare, diff, replay, type Difference, type Fixture } from './replay';
import { matches, reconcile } from './match';
import { DIFFERENCES, GENERAL, SAVED_DIFFERENCES } from './differences';
import { SAVED, savedOurs, type Saved } from './saved';
import { startLike332 } from './ours';

/** Fixtures recorded from EVA ICS 3.3.2 by record.ts (the source tree's copy: dist/ has no JSON). */
const FIXTURES = path.resolve(__dirname, '..', '..', '..', 'test', 'compat', 'fixtures', 'eva332');

function recorded(): Fixture[] {
  return fs.readdirSync(FIXTURES).filter((f) => f.endsWith('.json')).sort()
    .map((f) => JSON.parse(fs.readFileSync(path.join(FIXTURES, f), 'utf8')) as Fixture);
}

test('every call answers as EVA ICS 3.3.2 did, but for the listed differences, and every listed difference still occurs', async (t) => {
  const rec = recorded();
  // the fixtures are of this very list of calls (a call added to calls.ts needs a new recording)
  const ids = rec.flatMap((f) => f.cases.map((c) => c.id)).sort();
  t.deepEqual(ids, CALLS.map((c) => c.id).sort(), 'fixtures recorded from the calls of calls.ts');

  const ctl = await startLike332(t);
  const ours = await replay(ctl.url, SETUP.secrets);
  const found = compare(rec, ours);
  const { unlisted, stale } = reconcile(DIFFERENCES, found);

  const answers = rec.reduce((n, f) => n + f.cases.reduce((m, c) => m + Object.keys(c.answers).length, 0), 0);
  // alike: no difference but the general ones (headers, error texts)
  const differing = new Set(found.filter((d) => !GENERAL.some((g) => matches(g, d))).map((d) => `${d.call} ${d.transport}`));
  t.log(`${answers} answers of ${rec.length} functions over ${TRANSPORTS.length} transports: ${answers - differing.size} alike, ${differing.size} differ (${found.length} differences; ${DIFFERENCES.length} listed)`);
  t.deepEqual(unlisted.map((d) => JSON.stringify(d)), [], 'differences from 3.3.2 not in differences.ts');
  t.deepEqual(stale.map((l) => JSON.stringify(l)), [], 'differences.ts lists differences that no longer occur');

  // what the calls left on disk (3.3.2's recorded by record-saved.ts after the same calls)
  await ctl.stop();
  const d: { path: string; a: unknown; b: unknown }[] = [];
  diff(JSON.parse(fs.readFileSync(SAVED, 'utf8')) as Saved, await savedOurs(ctl.dir), '', d);
  const onDisk: Difference[] = d.map((x) => ({ call: `saved:${x.path.split(/[.[]/)[0]}`, transport: 'get', path: x.path, eva332: x.a, ours: x.b }));
  const disk = reconcile(SAVED_DIFFERENCES, onDisk);
  t.deepEqual(disk.unlisted.map((x) => JSON.stringify(x)), [], 'on-disk differences from 3.3.2 not in differences.ts');
  t.deepEqual(disk.stale.map((l) => JSON.stringify(l)), [], 'differences.ts lists on-disk differences that no longer occur');
});

test('the fixtures hold no secret and no per-run value', (t) => {
  const text = fs.readdirSync(FIXTURES).map((f) => fs.readFileSync(path.join(FIXTURES, f), 'utf8')).join('\n');
  for (const s of Object.values(SETUP.secrets)) t.false(text.includes(s), `key ${s} in a fixture`);
  t.notRegex(text, /token:[0-9A-Za-z]{8,}/, 'a token in a fixture');
  t.notRegex(text, /"(time|uptime|t)": \d/, 'a time in a fixture');
});
