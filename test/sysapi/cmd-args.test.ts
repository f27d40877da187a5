import test, { type ExecutionContext } from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { CommandLineError, splitArgv } from '../../core/toolkit/argv';
import { Keys, makeDir, startController } from '../helpers/controller';
import { needs } from '../helpers/tools';

/** Lines where shells, shell-quote and shlex read differently: ours must read each as Python's shlex.split does. */
const TRICKY = [
  '', '   ', 'a b  c', '\ta\r\nb\n', 'price $5', '"price $5"', 'a;b', 'a ; b', 'a|b', 'a && b', 'x>f 2>&1', '$(id)', '`id`',
  '(a) {b}', '#', 'a #b', 'a#b', "'#x'", '"it\'s"', `'say "hi"'`, '"a\\"b"', '"a\\b"', '"a\\\\b"', "'a\\b'", 'a\\ b',
  'a\\b', '\\\\', '\\"x', "\\'y", '""', "''", 'a "" b', "a''b", '"a"\'b\'c', '*.log ?x [a-z]', '~ ~/x', '$HOME "$HOME"',
  'héllo 日本 "ü x"', 'a\u000bb\u000cc', 'x=1 y="2 3"', '"\\$x" "\\`" "\\n"', '--opt=\'a b\'', 'a\\\nb', '!x !!',
];
/** Lines shlex.split refuses (ValueError): ours throws CommandLineError. */
const REFUSED = ['"open', "it's", 'a\\', '"a\\"', "'a", 'x "y\\'];

/** What python3's shlex.split makes of each line: [words] or null where it raises. */
function shlexSplit(lines: string[]): (string[] | null)[] {
  const prog = 'import json,shlex,sys\nout=[]\nfor l in json.load(sys.stdin):\n  try: out.append(shlex.split(l))\n  except ValueError: out.append(None)\nprint(json.dumps(out))';
  const r = spawnSync('python3', ['-c', prog], { input: JSON.stringify(lines), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python3 failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

needs('python3')('cmd arguments split exactly as Python shlex.split (POSIX mode) splits them', (t) => {
  const expected = shlexSplit([...TRICKY, ...REFUSED]);
  TRICKY.forEach((line, i) => {
    t.not(expected[i], null, `python refused ${JSON.stringify(line)}`);
    t.deepEqual(splitArgv(line), expected[i], JSON.stringify(line));
  });
  REFUSED.forEach((line, i) => {
    t.is(expected[TRICKY.length + i], null, `python split ${JSON.stringify(line)}`);
    t.throws(() => splitArgv(line), { instanceOf: CommandLineError }, JSON.stringify(line));
  });
});

/** Prints each argument in brackets, then what came on stdin. */
const SCRIPT = '#!/bin/sh\nfor x in "$@"; do printf "[%s]" "$x"; done\nprintf "|"\ncat\n';

async function withScript(t: ExecutionContext) {
  const dir = makeDir(t, { files: { 'xc/cmd/show': SCRIPT, 'xc/cmd/quick': '#!/bin/sh\necho done\n' } });
  for (const c of ['show', 'quick']) fs.chmodSync(path.join(dir, 'xc', 'cmd', c), 0o755);
  return startController(t, { dir });
}

test('a list of words passes as it is; s goes to standard input', async (t) => {
  const { client, url } = await withScript(t);
  const words = ['a b', '$HOME', '"q"', ''];
  const r = await client.ok('cmd', { k: Keys.master, c: 'show', a: words, s: 'line 1\nline 2', w: 10 });
  t.deepEqual(r.args, words);
  t.is(r.out, '[a b][$HOME]["q"][]|line 1\nline 2');
  // a repeated field in the query string and in a form
  const q = new URLSearchParams([['k', Keys.master], ['c', 'show'], ['w', '10'], ['a', 'x y'], ['a', '$z']]);
  const got = await (await fetch(`${url}/sys-api/cmd?${q}`)).json() as any;
  t.is(got.out, '[x y][$z]|');
  const form = await (await fetch(`${url}/sys-api/cmd`, { method: 'POST', body: q })).json() as any;
  t.is(form.out, '[x y][$z]|');
  const multipart = new FormData();
  for (const [name, value] of q) multipart.append(name, value);
  const mp = await (await fetch(`${url}/sys-api/cmd`, { method: 'POST', body: multipart })).json() as any;
  t.is(mp.out, '[x y][$z]|');
  // without s, stdin is empty (not the controller's)
  t.is((await client.ok('cmd', { k: Keys.master, c: 'show', a: 'one', w: 10 })).out, '[one]|');
  // a script that never reads its input: the unread rest is no error of the run
  const quick = await client.ok('cmd', { k: Keys.master, c: 'quick', s: 'x'.repeat(512 * 1024), w: 10 });
  t.like(quick, { status: 'completed', exitcode: 0, out: 'done\n' });
  for (const a of [[1, {}], { x: 1 }, ['a\0b']]) {
    const bad = await client.rpc('cmd', { k: Keys.master, c: 'show', a });
    t.is(bad.error?.code, 11, JSON.stringify(a));
  }
});
