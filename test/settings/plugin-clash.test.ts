import path from 'node:path';
import test from 'ava';
import { makeDir } from '../helpers/controller';
import { lineOf, runMain } from '../helpers/cli';

/** A drop-in plugin declaring `section.key` (an int setting). */
const declaring = (name: string, section: string, key: string) => `module.exports.plugin = {
  name: '${name}', kind: 'sysapi', version: '1.0.0',
  settings: { ${section}: { ${key}: { type: 'int', default: 1, min: 0, max: 10, description: 'mine' } } },
};
`;

test('a plugin declaring a setting the kernel declares stops the start (exit 3) naming both owners; --check-config reports it', async (t) => {
  const dir = makeDir(t, { files: { 'plugins/thief.js': declaring('thief', 'server', 'timeout') } });
  const file = path.join(dir, 'plugins', 'thief.js');
  for (const args of [['--dir', dir], ['--dir', dir, '--check-config']]) {
    const r = await runMain(t, args);
    t.is(r.code, 3, r.err);
    const line = lineOf(r.err, `${file}: error: `);
    t.truthy(line, r.err);
    t.regex(line!, /setting \[server\] timeout is declared by both the kernel and plugin thief: plugin thief must name its setting otherwise$/);
    t.false(r.err.includes('    at '), 'no stack trace');
  }
});

test('two plugins declaring the same setting: the second is named with its file, the first keeps the setting', async (t) => {
  const dir = makeDir(t, { files: { 'plugins/a.js': declaring('first', 'hello', 'times'), 'plugins/b.js': declaring('second', 'hello', 'times') } });
  const r = await runMain(t, ['--dir', dir, '--check-config']);
  t.is(r.code, 3, r.err);
  t.truthy(lineOf(r.err, `${path.join(dir, 'plugins', 'b.js')}: error: setting [hello] times is declared by both plugin first and plugin second`), r.err);
  t.regex(r.out, /1 error\(s\)/);
});

test('a plugin whose checkFiles throws is a settings error naming it (exit 3), not a crash', async (t) => {
  const plugin = `module.exports.plugin = { name: 'fragile', kind: 'sysapi', version: '1.0.0', checkFiles() { throw new Error('boom'); } };\n`;
  const dir = makeDir(t, { files: { 'plugins/fragile.js': plugin } });
  const r = await runMain(t, ['--dir', dir]);
  t.is(r.code, 3, r.err);
  t.truthy(lineOf(r.err, `${path.join(dir, 'plugins', 'fragile.js')}: error: plugin fragile could not check its files: boom`), r.err);
});
