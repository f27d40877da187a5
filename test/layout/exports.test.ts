import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { readModules, repositoryRoot, sameNames } from './modules';

const ROOT = repositoryRoot();

/**
 * Names more than one module may define, each with the reason:
 * - `plugin`: the one export the plugin loader reads from every plugin file.
 */
const SHARED: Record<string, string[] | 'plugin files'> = {
  plugin: 'plugin files',
};

test('no two modules of core/ or plugins/ export things of the same name (passing one on from another module is fine)', (t) => {
  const clashes = sameNames(readModules(ROOT, ['core', 'plugins'])).filter(([name, files]) => {
    const allowed = SHARED[name];
    if (allowed === 'plugin files') return files.some((f) => !f.startsWith('plugins/'));
    return !allowed || files.some((f) => !allowed.includes(f));
  });
  t.deepEqual(clashes.map(([name, files]) => `${name}: ${files.join(', ')}`), []);
});

test('no two test helpers export things of the same name', (t) => {
  const clashes = sameNames(readModules(ROOT, ['test/helpers']));
  t.deepEqual(clashes.map(([name, files]) => `${name}: ${files.join(', ')}`), []);
});

test('the check tells a name defined twice from one passed on', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'exports-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const files: Record<string, string> = {
    'a.ts': 'export const one = 1;\nexport function two() { return 2; }\nexport interface Three { x: number }\nexport type Four = string;\n'
      + 'const five = 5;\nexport { five, five as six };\nexport default 7;\ndeclare module \'./b\' { interface Eight { y: number } }\n',
    'b.ts': "export { one } from './a';\nexport * from './a';\nimport { two } from './a';\nexport { two };\nexport interface Eight { x: number }\n"
      + 'export class Three {}\nexport enum Four { A }\nexport const { six, seven: [nine] } = { six: 6, seven: [9] };\n',
  };
  for (const [f, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, f), text);
  const modules = readModules(dir, ['.']);
  t.deepEqual(modules.map((m) => [m.defines, m.passes]), [
    [['Four', 'Three', 'five', 'one', 'six', 'two'], []],
    [['Eight', 'Four', 'Three', 'nine', 'six'], ['*', 'one', 'two']],
  ]);
  t.deepEqual(sameNames(modules), [['Four', ['a.ts', 'b.ts']], ['six', ['a.ts', 'b.ts']], ['Three', ['a.ts', 'b.ts']]]);
});
