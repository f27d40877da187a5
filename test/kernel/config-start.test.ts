import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import test, { type ExecutionContext } from 'ava';
import { MAIN, makeDir, Keys, startController } from '../helpers/controller';
import { Eva33UcIni } from './config-eva33-sample';

interface Ended { code: number | null; out: string; err: string }

/** Run the built controller with `args` until it exits (killed, and failed, after 60 s). */
function runMain(t: ExecutionContext, args: string[]): Promise<Ended> {
  const proc = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  return new Promise((resolve) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
    proc.on('close', (code) => { clearTimeout(timer); resolve({ code, out, err }); });
  });
}

/** A controller directory whose etc/uc.ini is `ini` as written. */
function dirWith(t: ExecutionContext, ini: string, keysIni?: string): string {
  const dir = makeDir(t, { keysIni });
  fs.writeFileSync(path.join(dir, 'etc', 'uc.ini'), ini);
  return dir;
}

const base = '[server]\nname = testhost\n\n[webapi]\nlisten = 127.0.0.1:0\n';

const cases: { what: string; ini: string; line: number; message: RegExp }[] = [
  { what: 'a section header that does not close', ini: `${base}[sysapi\nsetup_mode = no\n`, line: 6, message: /malformed section header "\[sysapi"/ },
  { what: 'a line that is no setting', ini: `${base}just words\n`, line: 6, message: /malformed line "just words"/ },
  { what: 'a misspelt setting', ini: `${base}lisen = 127.0.0.1:0\n`, line: 6, message: /\[webapi\] unknown setting lisen \(did you mean listen\?\)/ },
  { what: 'a misspelt section', ini: `${base}[servr]\ntimeout = 5\n`, line: 6, message: /unknown section \[servr\] \(did you mean server\?\)/ },
  { what: 'a value of the wrong type', ini: base.replace('name = testhost', 'timeout = five'), line: 2, message: /\[server\] timeout: "five" is not a number/ },
  { what: 'a negative value', ini: base.replace('name = testhost', 'polldelay = -3'), line: 2, message: /\[server\] polldelay: -3 is out of range \(0 to \d+\)/ },
  { what: 'a zero bound', ini: `${base}max_body_size = 0\n`, line: 6, message: /\[webapi\] max_body_size: 0 is out of range \(at least 1\)/ },
  { what: 'a choice not offered', ini: base.replace('name = testhost', 'db_update = sometimes'), line: 2, message: /\[server\] db_update: "sometimes" is not one of instant, manual, on_exit/ },
  { what: 'a bad plugin setting', ini: `${base}[sysapi]\ncmd_max_running = -1\n`, line: 7, message: /\[sysapi\] cmd_max_running: -1 is out of range/ },
  { what: 'a setting given twice', ini: `${base}listen = 127.0.0.1:1\n`, line: 6, message: /\[webapi\] listen given twice \(first at line 5\)/ },
];

for (const c of cases) {
  test(`at start, ${c.what} stops the controller: exit 3, file:line and the reason on stderr`, async (t) => {
    const dir = dirWith(t, c.ini);
    const r = await runMain(t, ['--dir', dir]);
    t.is(r.code, 3, r.err);
    const file = path.join(dir, 'etc', 'uc.ini');
    const line = r.err.split('\n').find((l) => l.startsWith(`${file}:${c.line}: error: `));
    t.truthy(line, r.err);
    t.regex(line!, c.message);
    t.false(r.out.includes('listening'), r.out);
  });
}

test('every error of the file is told at once, in line order', async (t) => {
  const dir = dirWith(t, '[server\nlisen = 1\n[servr]\n[webapi]\nlisen = 127.0.0.1:0\n[server]\ntimeout = five\npolldelay = -3\n');
  const r = await runMain(t, ['--dir', dir]);
  t.is(r.code, 3);
  const lines = r.err.split('\n').filter((l) => l.includes(': error: ')).map((l) => Number(/uc\.ini:(\d+):/.exec(l)?.[1]));
  t.deepEqual(lines, [1, 3, 5, 7, 8]);
});

test('an EVA ICS 3.3 etc/uc.ini (v3.3.2 uc.ini-dist) starts: one info line per setting and section it does not use', async (t) => {
  const dir = dirWith(t, Eva33UcIni);
  const check = await runMain(t, ['--dir', dir, '--check-config']);
  t.is(check.code, 0, check.err);
  t.regex(check.err, /uc\.ini:7: info: \[server\] pid_file is an EVA ICS 3\.3 setting this controller does not use: ignored/);
  t.regex(check.err, /info: \[upnp\] is an EVA ICS 3\.3 section this controller does not use: ignored/);
  t.false(check.err.includes('error'), check.err);
  // started for real: it listens and answers, and the 3.3 log_file (log/uc.log) is the controller directory's
  const proc = spawn(process.execPath, [MAIN, '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => { if (proc.exitCode === null) proc.kill('SIGKILL'); });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not listening: ${out}`)), 60_000);
    proc.stdout.on('data', () => {
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}: ${out}`)); });
  });
  const r = await fetch(`${url}/sys-api/test?k=${Keys.master}`);
  t.is(r.status, 200);
  const info = await r.json() as { layout: string; polldelay: number };
  t.is(info.layout, 'enterprise');
  t.is(info.polldelay, 0.01);
  // the declared settings are described where the functions are: rpc.discover, x-settings
  const d = await (await fetch(`${url}/jrpc`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', method: 'rpc.discover', id: 1 }),
  })).json() as { result: { 'x-settings': Record<string, Record<string, Record<string, unknown>>> } };
  const settings = d.result['x-settings'];
  t.like(settings.webapi.listen, { type: 'string', default: '' });
  t.like(settings.server.polldelay, { type: 'number', default: 0.01, min: 0, unit: 's' });
  t.like(settings.sysapi.cmd_max_running, { type: 'int', default: 64, min: 1 });
  t.like(settings.corescripts.tick, { type: 'number', default: 1 });
  t.deepEqual(settings.server.db_update.choices, ['instant', 'manual', 'on_exit']);
  t.true(typeof settings.server.timeout.description === 'string');
  const log = fs.readFileSync(path.join(dir, 'log', 'uc.log'), 'utf8');
  t.regex(log, /\[server\] notify_on_start is an EVA ICS 3\.3 setting this controller does not use: ignored/);
  proc.kill('SIGTERM');
  await new Promise((resolve) => proc.on('exit', resolve));
});

test('key files: a malformed section header stops the start (exit 3); a key without `key` is skipped with a warning', async (t) => {
  const bad = dirWith(t, base, `[masterkey\nkey = ${Keys.master}\nmaster = yes\n`);
  const r = await runMain(t, ['--dir', bad]);
  t.is(r.code, 3);
  t.regex(r.err, new RegExp(`${path.join(bad, 'etc', 'uc_apikeys.ini').replace(/[.]/g, '\\.')}:1: error: malformed section header`));
  const keyless = dirWith(t, base, `[masterkey]\nkey = ${Keys.master}\nmaster = yes\n\n[nokey]\nmaster = yes\n`);
  const c = await runMain(t, ['--dir', keyless, '--check-config']);
  t.is(c.code, 0, c.err);
  t.regex(c.err, /uc_apikeys\.ini:5: warning: key \[nokey\] has no "key" field: skipped/);
});

test('--check-config prints every finding without starting: exit 3 with errors, 0 when clean', async (t) => {
  const dir = dirWith(t, `${base}lisen = x\n[sysapi]\ncmd_max_running = -1\n`);
  const r = await runMain(t, ['--dir', dir, '--check-config']);
  t.is(r.code, 3);
  t.regex(r.err, /uc\.ini:6: error: \[webapi\] unknown setting lisen \(did you mean listen\?\)/);
  t.regex(r.err, /uc\.ini:8: error: \[sysapi\] cmd_max_running: -1 is out of range \(at least 1\)/);
  t.regex(r.out, /2 error\(s\)/);
  t.false(fs.existsSync(path.join(dir, 'runtime')), 'nothing created');
  const clean = dirWith(t, base);
  const c = await runMain(t, ['--dir', clean, '--check-config']);
  t.is(c.code, 0, c.err);
  t.regex(c.out, /0 error\(s\), 0 other finding\(s\)/);
  // the shipped samples are clean
  for (const product of ['uc', 'lm', 'sfa']) {
    const d = makeDir(t, { product: product as 'uc' });
    fs.copyFileSync(path.resolve(__dirname, '..', '..', '..', 'etc', `${product}.ini-dist`), path.join(d, 'etc', `${product}.ini`));
    const s = await runMain(t, ['--dir', d, '--product', product, '--check-config']);
    t.is(s.code, 0, `${product}: ${s.err}`);
    t.regex(s.out, /0 error\(s\), 0 other finding\(s\)/, product);
  }
});

test('--dir of a folder that does not exist is an error (exit 3) unless --init is given', async (t) => {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'ctl-none-'));
  t.teardown(() => fs.rmSync(parent, { recursive: true, force: true }));
  const dir = path.join(parent, 'typo');
  const r = await runMain(t, ['--dir', dir]);
  t.is(r.code, 3);
  t.regex(r.err, /no such controller directory \(give --init to create one\)/);
  t.false(fs.existsSync(dir), 'nothing created');
  const c = await runMain(t, ['--dir', dir, '--check-config']);
  t.is(c.code, 3);
  t.false(fs.existsSync(dir));
  // --check-config creates nothing, --init or not: it says there is nothing to check, not "0 error(s)"
  const ic = await runMain(t, ['--dir', dir, '--init', '--check-config']);
  t.is(ic.code, 3, ic.out);
  t.regex(ic.err, /no such controller directory: nothing to check \(--check-config creates nothing; start with --init to create it\)/);
  t.false(ic.out.includes('error(s)'), ic.out);
  t.false(fs.existsSync(dir));
  // with --init it is created, with the sample etc/uc.ini-dist as etc/uc.ini and a new master key
  const proc = spawn(process.execPath, [MAIN, '--dir', dir, '--init'], { stdio: 'ignore' });
  t.teardown(() => { if (proc.exitCode === null) proc.kill('SIGKILL'); });
  const keyFile = path.join(dir, 'etc', 'uc_apikeys.ini');
  const deadline = Date.now() + 60_000;
  while (!fs.existsSync(keyFile) && proc.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.true(fs.existsSync(keyFile));
  t.is(fs.readFileSync(path.join(dir, 'etc', 'uc.ini'), 'utf8'), fs.readFileSync(path.resolve(__dirname, '..', '..', '..', 'etc', 'uc.ini-dist'), 'utf8'));
  proc.kill('SIGTERM');
  await new Promise((resolve) => { if (proc.exitCode !== null) resolve(null); else proc.on('exit', resolve); });
  // an existing file is never replaced
  const own = dirWith(t, base);
  const again = spawn(process.execPath, [MAIN, '--dir', own, '--init'], { stdio: 'ignore' });
  t.teardown(() => { if (again.exitCode === null) again.kill('SIGKILL'); });
  const ownKeys = path.join(own, 'etc', 'uc_apikeys.ini');
  while (!fs.existsSync(path.join(own, 'runtime')) && again.exitCode === null && Date.now() < deadline + 60_000) await new Promise((r) => setTimeout(r, 50));
  t.true(fs.existsSync(ownKeys));
  t.is(fs.readFileSync(path.join(own, 'etc', 'uc.ini'), 'utf8'), base);
  again.kill('SIGTERM');
  await new Promise((resolve) => { if (again.exitCode !== null) resolve(null); else again.on('exit', resolve); });
});

test('a drop-in plugin\'s declared section is checked like the kernel\'s: a bad value stops the start, a good one reaches the plugin', async (t) => {
  const plugin = `module.exports.plugin = {
  name: 'hello', kind: 'sysapi', version: '1.0.0',
  settings: { hello: { times: { type: 'int', default: 1, min: 1, max: 10, description: 'how many greetings' } } },
  start(ctx) {
    const { times } = ctx.config.section('hello', this.settings.hello);
    ctx.register({ name: 'hello_times', permission: 'any', description: 'times', params: {}, handler: () => ({ times }) });
  },
};
`;
  const bad = makeDir(t, { files: { 'plugins/hello.js': plugin }, ini: { hello: { times: 11 } } });
  const r = await runMain(t, ['--dir', bad, '--check-config']);
  t.is(r.code, 3);
  t.regex(r.err, /uc\.ini:\d+: error: \[hello\] times: 11 is out of range \(1 to 10\)/);
  const typo = makeDir(t, { files: { 'plugins/hello.js': plugin }, ini: { hello: { tims: 3 } } });
  t.regex((await runMain(t, ['--dir', typo, '--check-config'])).err, /\[hello\] unknown setting tims \(did you mean times\?\)/);
  const good = makeDir(t, { files: { 'plugins/hello.js': plugin }, ini: { hello: { times: 3 } } });
  const c = await runMain(t, ['--dir', good, '--check-config']);
  t.is(c.code, 0, c.err);
  const run = await startController(t, { dir: good });
  t.deepEqual(await run.client.ok('hello_times', { k: Keys.master }), { times: 3 });
  // without the plugin the section is unknown
  const none = makeDir(t, { ini: { hello: { times: 3 } } });
  t.regex((await runMain(t, ['--dir', none, '--check-config'])).err, /error: unknown section \[hello\]/);
});

test('under --watchdog a settings error ends the supervisor too (exit 3), not a restart loop', async (t) => {
  const dir = dirWith(t, base.replace('name = testhost', 'timeout = five'));
  const r = await runMain(t, ['--dir', dir, '--watchdog']);
  t.is(r.code, 3);
  t.regex(r.err, /uc\.ini:2: error: \[server\] timeout: "five" is not a number/);
  t.regex(r.out, /settings are in error/);
  t.is(r.out.match(/controller started/g)?.length, 1, r.out);
});
