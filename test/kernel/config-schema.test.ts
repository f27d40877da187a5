import 'reflect-metadata';
import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { discoverPlugins } from '../../core/plugins';
import { registryOf } from '../../core/settings/check';
import { bool, bound, choice, int, fromText, seconds, text, MAX_TIMER_SECONDS } from '../../core/schema';
import { readIni } from '../../core/ini';
import { checkDefinition } from '../../core/plugins';

const ETC = path.resolve(__dirname, '..', '..', '..', 'etc');

async function builtinSections(): Promise<Map<string, string[]>> {
  const skipped: string[] = [];
  const defs = (await discoverPlugins(path.join(ETC, 'no-drop-ins-here'), (file, reason) => skipped.push(`${file}: ${reason}`))).map((l) => l.def);
  if (skipped.length) throw new Error(skipped.join('\n'));
  return new Map([...registryOf(defs).sections()].map(([name, s]) => [name, Object.keys(s)]));
}

/** The settings an etc sample lists, set or commented out (`; key = value`), by section. */
function listed(file: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let section = '';
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const h = /^\[(.+)\]$/.exec(line.trim());
    if (h) { section = h[1]; out.set(section, []); continue; }
    const m = /^;?\s*([a-z_][a-z0-9_]*)\s*=/.exec(line);
    if (m && section) out.get(section)!.push(m[1]);
  }
  return out;
}

for (const product of ['uc', 'lm', 'sfa']) {
  test(`etc/${product}.ini-dist lists every declared setting, in every declared section, and nothing else`, async (t) => {
    const schema = await builtinSections();
    const sample = listed(path.join(ETC, `${product}.ini-dist`));
    t.deepEqual([...sample.keys()].sort(), [...schema.keys()].sort());
    for (const [section, keys] of schema) t.deepEqual([...(sample.get(section) ?? [])].sort(), [...keys].sort(), section);
    // and it reads without a finding
    t.deepEqual(readIni(fs.readFileSync(path.join(ETC, `${product}.ini-dist`), 'utf8'), 'x').findings, []);
  });
}

test('one rule for every value: empty is the default, negatives and out-of-range are refused, zero only where the range allows', (t) => {
  const n = int(5, 'a count');
  const b = bound(5, 'a bound');
  const s = seconds(2, 'a wait');
  for (const setting of [n, b, s]) t.deepEqual(fromText(setting, ''), { ok: true, value: setting.default });
  for (const setting of [n, b, s]) t.false(fromText(setting, '-1').ok);
  t.deepEqual(fromText(n, '0'), { ok: true, value: 0 });
  t.deepEqual(fromText(s, '0'), { ok: true, value: 0 });
  t.false(fromText(b, '0').ok);
  t.false(fromText(n, '1.5').ok);
  t.deepEqual(fromText(s, '1.5'), { ok: true, value: 1.5 });
  t.false(fromText(s, String(MAX_TIMER_SECONDS + 1)).ok);
  for (const bad of ['five', 'Infinity', 'NaN', '0x10', '1e400']) t.false(fromText(s, bad).ok, bad);
  const yes = bool(false, 'a switch');
  for (const v of ['yes', 'true', 'on', '1', 'Y']) t.deepEqual(fromText(yes, v), { ok: true, value: true }, v);
  for (const v of ['no', 'false', 'off', '0']) t.deepEqual(fromText(yes, v), { ok: true, value: false }, v);
  t.false(fromText(yes, 'maybe').ok);
  const c = choice('a', ['a', 'b'] as const, 'a choice');
  t.deepEqual(fromText(c, 'b'), { ok: true, value: 'b' });
  t.false(fromText(c, 'B').ok);
  t.deepEqual(fromText(text('x', 'a text'), ' y '), { ok: true, value: 'y' });
});

test('a plugin whose settings declaration is malformed is refused when loaded, with the reason', (t) => {
  t.like(checkDefinition({ name: 'p', kind: 'service', version: '1.0.0', settings: [] }), { code: 'malformed' });
  const def = (settings: unknown) => ({ name: 'p', kind: 'service', version: '1.0.0', settings });
  t.is(checkDefinition(def({ hello: { times: int(1, 'how many', { max: 10 }) } })), undefined);
  t.regex(checkDefinition(def([]))!.reason, /settings must be an object of sections/);
  t.regex(checkDefinition(def({ hello: { times: 5 } }))!.reason, /\[hello\] times must be made with int/);
  t.regex(checkDefinition(def({ hello: { Times: int(1, 'x') } }))!.reason, /setting name "Times"/);
  t.regex(checkDefinition(def({ hello: { times: { type: 'int', default: 1, description: 'x' } } }))!.reason, /a number needs min and max/);
  t.regex(checkDefinition(def({ hello: { mode: { type: 'choice', default: 'a', description: 'x' } } }))!.reason, /a choice needs its choices/);
  t.regex(checkDefinition(def({ hello: { times: int(20, 'how many', { max: 10 }) } }))!.reason, /its default does not fit/);
});
