import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { discoverAll, FILE, REGENERATE, render, ROOT, typeOf, type Discovery } from './functions';
import type { Product } from '../../core/defaults';

/**
 * plugins/FUNCTIONS.md is what the declarations say: rendered again from
 * `rpc.discover` of a running controller of each product, it must be the
 * committed file, byte for byte.
 */

let all: Record<Product, Discovery>;
test.before(async () => { all = await discoverAll(); });

test('plugins/FUNCTIONS.md is what rpc.discover describes (regenerate it when a declaration changes)', (t) => {
  const fresh = render(all);
  const rel = path.relative(ROOT, FILE);
  const committed = fs.existsSync(FILE) ? fs.readFileSync(FILE, 'utf8') : '';
  if (fresh === committed) { t.pass(); return; }
  const a = committed.split('\n');
  const b = fresh.split('\n');
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  t.fail(`${rel} is stale: regenerate it with \`${REGENERATE}\` and commit it.\n`
    + `first difference at line ${i + 1}:\n  committed: ${a[i] ?? '(end of file)'}\n  declared:  ${b[i] ?? '(end of file)'}`);
});

test('the reference carries every function with its aliases, permission, parameters and answer', (t) => {
  const text = render(all);
  const methods = all.uc.methods;
  t.true(methods.length > 40, 'the built-in functions');
  for (const m of methods) {
    const at = text.indexOf(`\n### \`${m.name}\`\n`);
    t.true(at > 0, `${m.name} has its section`);
    const next = text.indexOf('\n### ', at + 1);
    const section = text.slice(at, next < 0 ? undefined : next);
    t.true(section.includes(`- permission: ${m['x-permission']}\n`), `${m.name}: permission`);
    for (const alias of m['x-aliases']) t.true(section.includes(`\`${alias}\``), `${m.name}: alias ${alias}`);
    for (const p of m.params) {
      t.true(section.includes(`| \`${p.name}\` | ${typeOf(p.schema)} | ${p.required ? 'yes' : 'no'} |`), `${m.name}: parameter ${p.name}`);
    }
    t.true(section.includes('- answer: '), `${m.name}: answer`);
    t.true(text.includes(`[\`${m.name}\`](#`), `${m.name} is in a summary table`);
  }
  // the item functions the README names, on their own path
  for (const name of ['create', 'update', 'action', 'state', 'set_prop', 'state_history']) {
    t.true(text.includes(`- at: \`/jrpc, /<product>-api/${name}\``), name);
  }
});

test('a declaration that changes changes the reference', (t) => {
  const changed = structuredClone(all);
  for (const product of Object.keys(changed) as Product[]) {
    const test = changed[product].methods.find((m) => m.name === 'test')!;
    test.params.push({ name: 'x', required: false, schema: { type: 'integer' }, description: 'a new parameter' });
  }
  t.not(render(changed), render(all));
  t.regex(render(changed), /\| `x` \| integer \| no \| a new parameter \|/);
});

test('descriptions cannot break the markdown', (t) => {
  const one = structuredClone(all);
  for (const product of Object.keys(one) as Product[]) {
    one[product].methods = [{
      name: 'odd', description: 'a | b <script> *c* [d](e)\nnext', params: [], result: { description: 'x_y _z_' },
      'x-permission': 'any', 'x-aliases': [], 'x-api': 'sys',
    }];
  }
  const text = render(one);
  t.true(text.includes('a \\| b &lt;script&gt; \\*c\\* \\[d\\](e) next'));
  t.true(text.includes('- answer: x_y \\_z\\_'));
});
