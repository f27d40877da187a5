import path from 'node:path';
import test from 'ava';
import { startController } from '../helpers/controller';
import { PluginHost } from '../../core/plugins';

/** A drop-in taking one exact path: answers, declines (false), throws, or rejects, by the query. */
const PATHS = `
module.exports.plugin = {
  name: 'paths', kind: 'service', version: '1.0.0',
  start(ctx) {
    ctx.httpPath('/exact', (req, res, ip) => {
      const q = (req.url.split('?')[1] || '');
      if (q === 'throw') throw new Error('secret internal detail at /srv/x.js:1');
      if (q === 'reject') return Promise.reject(new Error('secret internal detail'));
      if (q === 'decline') return false;
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('exact ' + ip);
      return true;
    });
  },
};`;
/** A second drop-in wanting the same path: refused at its start. */
const TAKER = `module.exports.plugin = { name: 'taker', kind: 'service', version: '1.0.0', start(ctx) { ctx.httpPath('/exact', () => true); } };`;

test('ctx.httpPath answers exactly its path on node:http; a decline is 404, a failure 500 without details; one owner per path', async (t) => {
  const run = await startController(t, { files: { 'plugins/paths.js': PATHS, 'plugins/taker.js': TAKER } });
  const get = async (p: string) => {
    const r = await fetch(`${run.url}${p}`);
    return { status: r.status, text: await r.text() };
  };
  t.deepEqual(await get('/exact'), { status: 200, text: 'exact 127.0.0.1' });
  t.deepEqual(await get('/exact?x=1'), { status: 200, text: 'exact 127.0.0.1' }, 'the query is not the path');
  t.is((await get('/exact/more')).status, 404, 'exactly the path, not a prefix');
  t.is((await get('/exact?decline')).status, 404);
  for (const q of ['throw', 'reject']) {
    const r = await get(`/exact?${q}`);
    t.is(r.status, 500, q);
    t.notRegex(r.text, /secret|srv/, q);
  }
  const skipped = run.ctl.get(PluginHost).skipped.map((s) => [path.basename(s.file), s.code, s.reason]);
  t.is(skipped.length, 1);
  t.like(skipped[0], ['taker.js', 'start_failed']);
  t.regex(String(skipped[0][2]), /already taken by paths/);
});
