import test from 'ava';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { linksOf, problem } from '../docs/links';
import { packRelease, tarballFiles } from './release';

/**
 * The documents as the release carries them: every link of every markdown
 * file in the tarball resolves inside the tarball (a file, a folder, a
 * heading). What only the checkout has (the tests, their guides) is named in
 * words as a path of the source repository, not linked.
 */

let tmp: string;
let pkgDir: string;
let files: string[];
test.before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'packed-docs-'));
  const tarball = packRelease(tmp);
  execFileSync('tar', ['-xzf', tarball, '-C', tmp]);
  pkgDir = path.join(tmp, 'package');
  files = tarballFiles(tarball);
});
test.after.always(() => { if (tmp) fs.rmSync(tmp, { recursive: true, force: true }); });

test('every link of every packed markdown file names a file, folder or heading inside the tarball', (t) => {
  const paths = new Set<string>(['']);
  for (const f of files) {
    const parts = f.split('/');
    for (let i = 1; i <= parts.length; i++) paths.add(parts.slice(0, i).join('/'));
  }
  const docs = files.filter((f) => f.endsWith('.md'));
  t.true(docs.includes('README.md') && docs.includes('plugins/console/README.md') && docs.includes('etc/README.md'), docs.join(' '));
  const links = docs.flatMap((f) => linksOf(f, fs.readFileSync(path.join(pkgDir, f), 'utf8')));
  t.true(links.length > 50, `links are found (${links.length})`);
  const wrong = links.map((l) => [l, problem(pkgDir, paths, l, [])] as const).filter(([, p]) => p);
  t.deepEqual(wrong.map(([l, p]) => `${l.file}:${l.line}: ${p?.replace('the repository', 'the tarball')}`), []);
});
