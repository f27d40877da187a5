import test from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeDir, startController, Keys } from '../helpers/controller';

const dead = 99_999_999; // above any pid_max: no process has it
const temp = (name: string, pid = dead) => `.${name}.${pid}.0badf00d.tmp`;

test('temp files of killed writers are swept from all of runtime/ at start: items, cvars, user db, notifier files, histories, file_put folders', async (t) => {
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'outside-'));
  t.teardown(() => fs.rmSync(outside, { recursive: true, force: true }));
  fs.writeFileSync(path.join(outside, temp('x')), 'not ours: outside runtime/');
  const stale = [
    `runtime/${temp('uc_items.json')}`, `runtime/${temp('uc_cvars.json')}`, `runtime/db/${temp('uc.db')}`,
    `runtime/uc_notify.d/${temp('n1.json')}`, `runtime/${temp('history.db')}`, `runtime/a/b/c/${temp('conf.txt')}`,
  ];
  const kept = [
    `runtime/${temp('live.txt', process.pid)}`, // a writer that is running (this process): maybe a write under way
    'runtime/.conf.txt.tmp', 'runtime/plain.tmp', `runtime/a/${temp('x').slice(1)}`, // not temp names of ours
  ];
  const dir = makeDir(t, { files: Object.fromEntries([...stale, ...kept].map((f) => [f, 'half'])) });
  fs.symlinkSync(outside, path.join(dir, 'runtime', 'out')); // a link is not followed
  const { client } = await startController(t, { dir });
  t.true(await client.ok('test', { k: Keys.master }).then((r: any) => r.ok));
  for (const f of stale) t.false(fs.existsSync(path.join(dir, f)), f);
  for (const f of kept) t.true(fs.existsSync(path.join(dir, f)), f);
  t.deepEqual(fs.readdirSync(outside), [temp('x')]);
  t.regex(fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'), new RegExp(`removed ${stale.length} unfinished temp file`));
});
