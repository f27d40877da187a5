import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { Keys, makeDir, startController } from '../helpers/controller';
import { checkoutRoot, packRelease } from '../release/release';
import { Receiver } from '../helpers/receiver';
import { EMIT_PLUGIN, stateEvent, stats } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { runMain } from '../helpers/cli';

/**
 * The plugin guide (plugins/README.md) as a third party uses it: its two
 * notifier examples taken from the file as they stand, the TypeScript one
 * compiled in a folder outside the project against the declarations of an
 * `npm pack`ed package only, both dropped into a controller.
 */

const k = Keys.master;
const ROOT = checkoutRoot();
const BIN = path.join(ROOT, 'dist', 'plugins', 'notifiers', 'cli', 'notifier-bin.js');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** The fenced block of `lang` in the guide whose first line is `first`. */
function example(lang: string, first: string): string {
  const guide = fs.readFileSync(path.join(ROOT, 'plugins', 'README.md'), 'utf8');
  for (const m of guide.matchAll(/```(\w+)\n([\s\S]*?)```/g)) if (m[1] === lang && m[2].startsWith(first)) return m[2];
  throw new Error(`no ${lang} example starting with ${first} in plugins/README.md`);
}

let tmp: string;
/** the compiled TypeScript example */
let posthookJs: string;

/** A folder outside the project holding the packed package as npm installs it, and the author's tsc. */
function authorFolder(): string {
  const dir = path.join(tmp, 'author');
  const pkgDir = path.join(dir, 'node_modules', 'eva-sysapi-runtime');
  fs.mkdirSync(pkgDir, { recursive: true });
  execFileSync('tar', ['-xzf', packRelease(tmp), '-C', pkgDir, '--strip-components=1']);
  // what npm would install beside it: its dependency that the declarations name, and the author's node types
  fs.symlinkSync(path.join(ROOT, 'node_modules', 'tsyringe'), path.join(dir, 'node_modules', 'tsyringe'));
  fs.mkdirSync(path.join(dir, 'node_modules', '@types'));
  fs.symlinkSync(path.join(ROOT, 'node_modules', '@types', 'node'), path.join(dir, 'node_modules', '@types', 'node'));
  return dir;
}

function tsc(dir: string, files: string[]): { status: number | null; out: string } {
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { target: 'ES2022', module: 'node16', moduleResolution: 'node16', strict: true, outDir: 'out', types: ['node'], skipLibCheck: true },
    files,
  }));
  const r = spawnSync(process.execPath, [TSC, '-p', dir], { cwd: dir, encoding: 'utf8', timeout: 240_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

test.before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'guide-'));
});
test.after.always(() => { if (tmp) fs.rmSync(tmp, { recursive: true, force: true }); });

test.serial('the TypeScript example compiles against the packed declarations only; a wrong type does not', (t) => {
  const dir = authorFolder();
  t.false(fs.realpathSync(dir).startsWith(ROOT), 'outside the project');
  fs.writeFileSync(path.join(dir, 'posthook.ts'), example('ts', '// posthook.ts'));
  const good = tsc(dir, ['posthook.ts']);
  t.is(good.status, 0, good.out);
  posthookJs = fs.readFileSync(path.join(dir, 'out', 'posthook.js'), 'utf8');
  // the declarations are really checked: a setting kind that does not exist and an endpoint without stop are refused
  fs.writeFileSync(path.join(dir, 'bad.ts'), `import type { NotifierType } from 'eva-sysapi-runtime/plugin';
export const t: NotifierType = { name: 'x', settings: { a: { type: 'text', description: '' } }, create: () => ({ test: async () => {}, send: async () => {} }) };
`);
  const bad = tsc(dir, ['bad.ts']);
  t.not(bad.status, 0);
  t.regex(bad.out, /bad\.ts.*"text"/);
  t.regex(bad.out, /stop/);
});

interface Ran { code: number; out: string; err: string }

function cli(args: string[]): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { timeout: 60_000 }, (error, out, err) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, out, err });
    });
  });
}

async function ok(t: ExecutionContext, args: string[]): Promise<string> {
  const r = await cli(args);
  t.is(r.code, 0, `${args.join(' ')}: ${r.err}`);
  return r.out;
}

test.serial('both examples dropped in: the command line lists, creates and tests them; the controller delivers through them', async (t) => {
  if (!posthookJs) return t.fail('the TypeScript example did not compile');
  const rcv = await Receiver.start(t);
  const dir = makeDir(t, { files: { 'plugins/jsonl.js': example('js', '// jsonl.js'), 'plugins/posthook.js': posthookJs, 'plugins/test-emit.js': EMIT_PLUGIN } });

  const help = await ok(t, ['--dir', dir, '--help']);
  t.regex(help, /jsonl: appends each event/);
  t.regex(help, /pretty \(boolean, default false\): indent the JSON/);
  t.regex(help, /posthook: POSTs each batch/);
  t.regex(help, /url \(string, required\)/);

  await ok(t, ['--dir', dir, 'create', '-y', '-s', 'site', 'lines', 'jsonl:events.jsonl']);
  await ok(t, ['--dir', dir, 'create', '-y', 'hook', `posthook:${rcv.uri}`]);
  await ok(t, ['--dir', dir, 'set', 'hook', 'tag', 'plant']);
  for (const id of ['lines', 'hook']) await ok(t, ['--dir', dir, 'subscribe', 'state', id, '-v', '#', '-g', '#']);
  const refused = await cli(['--dir', dir, 'create', 'nope', 'posthook:ftp://x']);
  t.is(refused.code, 1);
  t.regex(refused.err, /url must be http/);
  const list = await ok(t, ['--dir', dir, 'list']);
  t.regex(list, /jsonl\s+lines\s+enabled\s+events\.jsonl/);
  t.regex(list, /posthook\s+hook\s+enabled\s+http:\/\/127\.0\.0\.1/);
  t.regex(await ok(t, ['--dir', dir, 'test', 'lines']), /lines: test passed/);
  t.regex(await ok(t, ['--dir', dir, 'test', 'hook']), /hook: test passed/);
  t.like(rcv.requests[0]?.json, { subject: 'test' });
  const file = path.join(dir, 'runtime', 'events.jsonl');
  t.like(JSON.parse(fs.readFileSync(file, 'utf8')), { subject: 'test', space: 'site' });

  // the schema is the check: a wrong kind is refused by the command line and by the controller, with the setting named
  const wrong = await cli(['--dir', dir, 'set', 'lines', 'pretty', 'maybe']);
  t.is(wrong.code, 1);
  t.regex(wrong.err, /pretty must be true or false/);
  const odd = path.join(dir, 'runtime', 'uc_notify.d', 'odd.json');
  fs.writeFileSync(odd, JSON.stringify({ id: 'odd', type: 'jsonl', enabled: true, file: 'o.jsonl', pretty: 'maybe' }));
  const check = await runMain(t, ['--dir', dir, '--check-config']);
  t.is(check.code, 3, check.err);
  t.regex(check.err, /odd\.json: error: bad jsonl config: pretty must be true or false/);
  fs.rmSync(odd);

  const { client } = await startController(t, { dir });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:g/a', 1, '7'), stateEvent('sensor:g/b', 2)] });
  for (const id of ['lines', 'hook']) {
    await until(`${id} delivered`, async () => (await stats(client, k, id)).sent === 2, 20_000);
  }
  t.like(await stats(client, k, 'lines'), { lines: 3, test: 'passed' }); // the start-up test line, then the events
  t.like(await stats(client, k, 'hook'), { posted: 2, test: 'passed' });
  const lines = fs.readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  t.deepEqual(lines.slice(-2).map((l) => [l.subject, l.space, l.data.oid]), [['state', 'site', 'sensor:g/a'], ['state', 'site', 'sensor:g/b']]);
  const posted = rcv.requests.filter((r) => r.json?.subject === 'state').flatMap((r) => r.json.events);
  t.deepEqual(posted.map((e: { oid: string }) => e.oid), ['sensor:g/a', 'sensor:g/b']);
  t.like(await client.ok('get_notifier', { k, i: 'hook' }), { type: 'posthook', url: rcv.uri, tag: 'plant' });
});
