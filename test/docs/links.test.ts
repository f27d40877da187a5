import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { anchorsOf, linksOf, markdownFiles, problem, repositoryPaths, slug, type Link } from './links';
import { needs } from '../helpers/tools';

/**
 * Every link of every markdown file of the repository resolves inside it: a
 * relative link names a file or folder of the repository, an anchor names a
 * heading of its file, and nothing points outside (no URL is allowed: the
 * list below is empty on purpose; a public reference added to it is a
 * decision to write down there).
 */

const ROOT = path.resolve(__dirname, '..', '..', '..');
const ALLOWED_EXTERNAL: readonly string[] = [];

function allLinks(): Link[] {
  return markdownFiles(ROOT).flatMap((f) => linksOf(f, fs.readFileSync(path.join(ROOT, f), 'utf8')));
}

needs('git')('every relative link of every markdown file names a file, folder or heading of the repository', (t) => {
  const files = markdownFiles(ROOT);
  t.true(files.includes('README.md') && files.includes('core/README.md'), 'the markdown files are found');
  const paths = repositoryPaths(ROOT);
  const links = allLinks();
  t.true(links.length > 50, `links are found (${links.length})`);
  const wrong = links.map((l) => [l, problem(ROOT, paths, l, ALLOWED_EXTERNAL)] as const).filter(([, p]) => p && !p.startsWith('points outside'));
  t.deepEqual(wrong.map(([l, p]) => `${l.file}:${l.line}: ${p}`), []);
});

needs('git')('no markdown file links outside the repository', (t) => {
  const paths = repositoryPaths(ROOT);
  const outside = allLinks().map((l) => [l, problem(ROOT, paths, l, ALLOWED_EXTERNAL)] as const).filter(([, p]) => p?.startsWith('points outside'));
  t.deepEqual(outside.map(([l, p]) => `${l.file}:${l.line}: ${p}`), []);
});

needs('git')('the checker finds what is wrong and leaves code alone', (t) => {
  const paths = repositoryPaths(ROOT);
  const text = [
    '# Title', '',
    '[ok](core/README.md) [ok anchor](core/README.md#settings) [folder](plugins/items/) [here](#tests)',
    '[gone](core/nothing.md) [bad anchor](core/README.md#no-such-heading) [up](../outside.md)',
    '[web](https://example.com/x) <https://example.org> see www.example.net today',
    '[ref]: plugins/README.md',
    '`[code](nowhere.md)` and `https://in.a.code.span`',
    '```', '[fenced](nowhere.md) https://in.a.fence', '```',
  ].join('\n');
  const found = linksOf('README.md', text).map((l) => [l.target, problem(ROOT, paths, l, []) ?? 'ok']);
  t.deepEqual(found, [
    ['core/README.md', 'ok'], ['core/README.md#settings', 'ok'], ['plugins/items/', 'ok'], ['#tests', 'ok'],
    ['core/nothing.md', 'names nothing in the repository: core/nothing.md'],
    ['core/README.md#no-such-heading', 'no heading no-such-heading in core/README.md: core/README.md#no-such-heading'],
    ['../outside.md', 'leaves the repository: ../outside.md'],
    ['https://example.com/x', 'points outside the repository: https://example.com/x'],
    ['https://example.org', 'points outside the repository: https://example.org'],
    ['www.example.net', 'points outside the repository: www.example.net'],
    ['plugins/README.md', 'ok'],
  ]);
  t.is(problem(ROOT, paths, { file: 'README.md', line: 1, target: 'https://example.com/x' }, ['https://example.com/x']), undefined, 'a listed reference passes');
});

test('anchors are GitHub\'s: markup and punctuation dropped, repeats numbered', (t) => {
  t.is(slug('Durability (`core/store/`)'), 'durability-corestore');
  t.is(slug('Hardening: what proves each item of the audit (issue 10)'), 'hardening-what-proves-each-item-of-the-audit-issue-10');
  t.is(slug('`rpc.discover`'), 'rpcdiscover');
  t.is(slug('`set_prop` and _emphasis_ and [a link](x.md)'), 'set_prop-and-emphasis-and-a-link');
  t.deepEqual([...anchorsOf('# A\n## A\n```\n# not a heading\n```\n### A\n<a id="x"></a>')], ['a', 'a-1', 'a-2', 'x']);
});

test('README.md is a map that fits on a page and names what a newcomer needs', (t) => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  t.true(readme.split('\n').length <= 250, `README.md has ${readme.split('\n').length} lines`);
  t.regex(readme, /^npm test\b/m, 'the test command');
  t.regex(readme, /^npm install && npm start\b/m, 'install and start');
  for (const fn of ['create', 'update', 'action', 'state', 'set_prop', 'state_history', 'state_log']) t.true(readme.includes(`\`${fn}\``), fn);
  for (const type of ['json', 'http-post', 'http', 'db', 'mqtt']) t.true(readme.includes(`\`${type}\``), `notifier type ${type}`);
  t.regex(readme, /a=db_1/, 'the history with a=');
  for (const doc of ['core/README.md', 'plugins/README.md', 'plugins/FUNCTIONS.md', 'etc/README.md']) {
    t.true(readme.includes(`](${doc})`), `links ${doc}`);
  }
  // the tests' guides are in the repository only (the release holds no tests): named, not linked (test/release/packed-links.test.ts)
  for (const doc of ['test/README.md', 'test/bench/README.md', 'test/soak/README.md']) t.true(readme.includes(`\`${doc}\``), `names ${doc}`);
});
