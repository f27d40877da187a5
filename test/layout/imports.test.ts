import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { circles, readModules, repositoryRoot } from './modules';

const ROOT = repositoryRoot();
const all = readModules(ROOT, ['core', 'plugins']);
const modules = () => all;

test('no module of core/ or plugins/ reaches itself through its imports (type-only ones included)', (t) => {
  const found = circles(modules());
  t.deepEqual(found.map((c) => c.join(' -> ')), []);
});

test('no test module reaches itself through its imports', (t) => {
  t.deepEqual(circles(readModules(ROOT, ['test'])).map((c) => c.join(' -> ')), []);
});

test('core/toolkit/ imports nothing of the rest of the tree: it knows nothing of the kernel or a plugin', (t) => {
  const outside = modules().filter((m) => m.file.startsWith('core/toolkit/'))
    .flatMap((m) => m.imports.filter((f) => !f.startsWith('core/toolkit/')).map((f) => `${m.file} -> ${f}`));
  t.deepEqual(outside, []);
});

test('the kernel imports no plugin', (t) => {
  const found = modules().filter((m) => m.file.startsWith('core/'))
    .flatMap((m) => m.imports.filter((f) => f.startsWith('plugins/')).map((f) => `${m.file} -> ${f}`));
  t.deepEqual(found, []);
});

test('the way into a function (the call object, dispatch, JSON RPC, results) imports no transport: every transport may use it', (t) => {
  const found = all.filter((m) => ['core/call.ts', 'core/dispatch.ts', 'core/rpc.ts', 'core/results.ts'].includes(m.file))
    .flatMap((m) => m.imports.filter((f) => f.startsWith('core/http/')).map((f) => `${m.file} -> ${f}`));
  t.deepEqual(found, []);
});

test('the check finds a circle of imports, type-only imports, re-exports, import(), require() and augmentations', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'imports-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const files: Record<string, string> = {
    'core/a.ts': "import { b } from './b';\nexport const a = b + 1;\n",
    'core/b.ts': "import type { A } from './sub';\nexport const b = 1;\nexport type B = A;\n",
    'core/sub/index.ts': "export * from '../a';\nexport type A = number;\n",
    'core/c.ts': "export function c() { return import('./d'); }\n",
    'core/d.ts': "// eslint-disable-next-line\nconst c = require('./c');\nexport const d = c;\n",
    'core/e.ts': "declare module './f' { interface F { e: number } }\nexport const e = 1;\n",
    'core/f.ts': "import { e } from './e';\nexport interface F { f: number }\nexport const f = e;\n",
    'core/g.ts': "import fs from 'node:fs';\nimport { a } from './a';\nexport const g = [fs, a];\n",
  };
  for (const [f, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.writeFileSync(path.join(dir, f), text);
  }
  t.deepEqual(circles(readModules(dir, ['core'])), [
    ['core/c.ts', 'core/d.ts', 'core/c.ts'],
    ['core/e.ts', 'core/f.ts', 'core/e.ts'],
    ['core/a.ts', 'core/b.ts', 'core/sub/index.ts', 'core/a.ts'],
  ]);
});
