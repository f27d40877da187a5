import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import test, { type ExecutionContext } from 'ava';
import { makeDir, startController, Keys, MAIN } from '../helpers/controller';
import { until } from '../helpers/wait';

/**
 * A drop-in that writes one record of each level at start, one of them with
 * control characters and a second line, then writes `logged`.
 */
const LEVELS_PLUGIN = `const fs = require('node:fs');
module.exports.plugin = { name: 'levels', kind: 'service', version: '1.0.0',
  start(ctx) {
    ctx.log.debug('a debug record');
    ctx.log.info('an info record');
    ctx.log.warning('a warning record');
    ctx.log.error('an error record\\nsecond line of the error');
    ctx.log.critical('a critical record');
    ctx.log.info('esc \\x1b[2J bell \\x07 nul \\x00 csi \\x9b del \\x7f tab\\tend');
    fs.writeFileSync(ctx.paths.dir + '/logged', '');
  } };`;

/** Run the controller as a child with standard output into a file; returns that output once it stopped. */
async function consoleOf(t: ExecutionContext, ini: Record<string, Record<string, string | boolean>>, journal: 'match' | 'other' | 'none') {
  const dir = makeDir(t, { files: { 'plugins/levels.js': LEVELS_PLUGIN }, ini });
  const outFile = path.join(dir, 'console.out');
  const fd = fs.openSync(outFile, 'w');
  const st = fs.fstatSync(fd);
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.JOURNAL_STREAM;
  // systemd names the stream it gave the service; a different one means the output went elsewhere
  if (journal === 'match') env.JOURNAL_STREAM = `${st.dev}:${st.ino}`;
  if (journal === 'other') env.JOURNAL_STREAM = `${st.dev}:${st.ino + 1}`;
  const proc = spawn(process.execPath, [MAIN, '--dir', dir], { stdio: ['ignore', fd, 'pipe'], env });
  fs.closeSync(fd);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  t.teardown(() => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL'); });
  await until('controller up', () => fs.existsSync(path.join(dir, 'logged')) && /uc controller listening on/.test(fs.readFileSync(outFile, 'utf8')), 20_000);
  proc.kill('SIGTERM');
  t.is(await exited, 0);
  return fs.readFileSync(outFile, 'utf8');
}

const logLines = (out: string) => out.split('\n').filter((l) => /levels|controller|webapi/.test(l));

test('log: under the journal each console line starts with its syslog priority and carries no time of its own', async (t) => {
  const out = await consoleOf(t, { server: { log_file: '', debug: true } }, 'match');
  const lines = logLines(out);
  t.true(lines.includes('<7>DEBUG levels: a debug record'));
  t.true(lines.includes('<6>INFO levels: an info record'));
  t.true(lines.includes('<4>WARNING levels: a warning record'));
  t.true(lines.includes('<3>ERROR levels: an error record'));
  // a second line of an error is an error too: journalctl -p err shows it
  t.true(out.split('\n').includes('<3>    second line of the error'));
  t.true(lines.includes('<2>CRITICAL levels: a critical record'));
  for (const l of out.split('\n').filter((x) => /^<\d>/.test(x))) t.notRegex(l, /\d{4}-\d\d-\d\dT\d\d:\d\d/);
  t.false(out.includes('\x1b'));
});

test('log: a JOURNAL_STREAM naming another stream (inherited, output redirected) leaves the plain format', async (t) => {
  const out = await consoleOf(t, { server: { log_file: '' } }, 'other');
  const line = logLines(out).find((l) => l.includes('a warning record'))!;
  t.regex(line, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARNING levels: a warning record$/);
  t.false(out.includes('<4>'));
});

test('log: json format under the journal: the priority, then one object without time', async (t) => {
  const out = await consoleOf(t, { server: { log_file: '', log_format: 'json' } }, 'match');
  const line = out.split('\n').find((l) => l.includes('an error record'))!;
  t.true(line.startsWith('<3>{'));
  t.deepEqual(JSON.parse(line.slice(3)), { level: 'error', module: 'levels', message: 'an error record\nsecond line of the error' });
});

test('log: control characters are escaped in the text log file and on the console; tab stays, a newline is a continuation', async (t) => {
  const run = await startController(t, { files: { 'plugins/levels.js': LEVELS_PLUGIN } });
  // a client's own record, with a forged second record after a carriage return
  await run.client.ok('log', { k: Keys.master, l: 'info', m: 'client text\r2026-01-01T00:00:00.000Z CRITICAL forged: \x1b]0;title\x07' });
  const file = fs.readFileSync(path.join(run.dir, 'controller.log'), 'utf8');
  t.true(file.includes('INFO levels: esc \\x1b[2J bell \\x07 nul \\x00 csi \\x9b del \\x7f tab\tend'));
  t.false(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(file));
  t.true(file.includes('\n    2026-01-01T00:00:00.000Z CRITICAL forged: \\x1b]0;title\\x07'));
  t.false(/^\S+ CRITICAL forged/m.test(file));
  // what the API returns is the message as written
  const recs = (await run.client.ok('log_get', { k: Keys.master, l: 'info', n: 50 })) as { msg: string }[];
  t.true(recs.some((r) => r.msg.startsWith('esc \x1b[2J')));
  // and the console: the same escape without the journal
  const out = await consoleOf(t, { server: { log_file: '' } }, 'none');
  t.true(out.includes('INFO levels: esc \\x1b[2J bell \\x07'));
  t.false(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(out));
});

test('log: json format in the log file: one object per line with time, level, module, message', async (t) => {
  const dir = makeDir(t, { files: { 'plugins/levels.js': LEVELS_PLUGIN }, ini: { server: { log_format: 'json' } } });
  await startController(t, { dir });
  const lines = fs.readFileSync(path.join(dir, 'controller.log'), 'utf8').trim().split('\n');
  const recs = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  for (const r of recs) t.deepEqual(Object.keys(r), ['time', 'level', 'module', 'message']);
  t.truthy(recs.find((r) => r.level === 'critical' && r.module === 'levels' && r.message === 'a critical record'));
  t.truthy(recs.find((r) => r.message === 'esc \x1b[2J bell \x07 nul \x00 csi \x9b del \x7f tab\tend'));
  t.regex(String(recs[0].time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.false(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(lines.join('\n')));
});
