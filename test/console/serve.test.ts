import test from 'ava';
import fs from 'node:fs';
import path from 'node:path';
import { startController } from '../helpers/controller';
import { consoleFiles, AssetsDir } from '../../plugins/console/index';
import { loadAssets } from '../../plugins/console/static';

test('the build puts the page where the plugin serves it from, and it is at most 200 KB gzipped', (t) => {
  for (const f of ['index.html', 'app.js', 'style.css']) t.true(fs.existsSync(path.join(AssetsDir, f)), f);
  const assets = loadAssets(consoleFiles());
  const gz = [...assets.values()].reduce((n, a) => n + a.gzip.length, 0);
  t.log(`console assets: ${assets.size} files, ${[...assets.values()].reduce((n, a) => n + a.body.length, 0)} bytes, ${gz} bytes gzipped`);
  t.true(gz <= 200 * 1024, `${gz} bytes gzipped`);
});

test('the console\'s scripts write text only: no HTML from a string, no eval, the token in sessionStorage only', (t) => {
  const scripts = fs.readdirSync(AssetsDir).filter((f) => f.endsWith('.js'));
  t.true(scripts.length >= 6, scripts.join(', '));
  for (const f of scripts) {
    const code = fs.readFileSync(path.join(AssetsDir, f), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
    t.notRegex(code, /\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(/, f);
    t.notRegex(code, /localStorage|document\.cookie/, f);
    t.notRegex(code, /\.style\.|setAttribute\(\s*'style'/, `${f}: no inline style (the CSP refuses it)`);
  }
});

test('the console at / : its own files only, a CSP without inline scripts, no cookie; other paths stay 404', async (t) => {
  const { url } = await startController(t);
  const r = await fetch(`${url}/`);
  t.is(r.status, 200);
  t.is(r.headers.get('content-type'), 'text/html; charset=utf-8');
  const csp = r.headers.get('content-security-policy') ?? '';
  t.regex(csp, /script-src 'self'(;|$)/);
  t.regex(csp, /default-src 'none'/);
  t.notRegex(csp, /unsafe/);
  t.regex(csp, /frame-ancestors 'none'/);
  t.is(r.headers.get('x-content-type-options'), 'nosniff');
  t.is(r.headers.get('set-cookie'), null);
  const html = await r.text();
  t.notRegex(html, /<script(?![^>]*\ssrc=)[^>]*>/, 'every script is a file');
  t.notRegex(html, /\sstyle=|<style|\son[a-z]+=/i, 'no inline style or handler');
  for (const m of html.matchAll(/(?:src|href)="([^"#]+)"/g)) {
    t.true(m[1].startsWith('/'), `${m[1]} is served here (no CDN)`);
    const a = await fetch(url + m[1]);
    t.is(a.status, 200, m[1]);
    await a.arrayBuffer();
  }
  const js = await fetch(`${url}/app.js`, { headers: { 'accept-encoding': 'gzip' } });
  t.is(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
  t.is(js.headers.get('content-encoding'), 'gzip');
  t.regex(await js.text(), /sessionStorage/);
  const again = await fetch(`${url}/app.js`, { headers: { 'if-none-match': js.headers.get('etag')! } });
  t.is(again.status, 304);
  for (const p of ['/nope', '/../etc/passwd', '/assets/app.js', '/%2e%2e/package.json']) {
    const n = await fetch(url + p);
    t.is(n.status, 404, p);
    t.deepEqual(await n.json(), { result: 'ERROR', _error: 'not found' });
  }
  const post = await fetch(`${url}/`, { method: 'POST' });
  t.is(post.status, 404);
  await post.arrayBuffer();
  // the API is where it was
  const api = await fetch(`${url}/sys-api/test`);
  t.is(api.status, 403);
  await api.arrayBuffer();
});

test('the browser scripts in the assets folder are not taken for plugins', async (t) => {
  const { dir } = await startController(t);
  t.notRegex(fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'), /app\.js|skipped/);
});
