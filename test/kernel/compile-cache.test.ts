import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { makeDir, spawnListening, Keys, MAIN } from '../helpers/controller';
import { skipWhen } from '../helpers/tools';

const [major, minor] = process.versions.node.split('.').map(Number);
/** Node's module compile cache (NODE_COMPILE_CACHE) came with Node 22.1; Node 20 ignores the variable. */
const hasCompileCache = major > 22 || (major === 22 && minor >= 1);

const filesUnder = (dir: string): number => fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;

// the systemd unit sets NODE_COMPILE_CACHE to the service's cache folder (etc/eva-controller@.service)
skipWhen(!hasCompileCache && `needs node 22.1 or later (NODE_COMPILE_CACHE), this is ${process.version}`)('with NODE_COMPILE_CACHE the controller\'s compiled modules are kept there, and a start from that cache answers', async (t) => {
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'compile-cache-'));
  t.teardown(() => fs.rmSync(cache, { recursive: true, force: true }));
  const dir = makeDir(t);
  const env = { ...process.env, NODE_COMPILE_CACHE: cache };
  for (const round of ['first start', 'start from the cache']) {
    const child = await spawnListening(t, [process.execPath, MAIN, '--dir', dir], { env });
    t.is((await child.client.ok('test', { k: Keys.master })).product_code, 'uc', round);
    child.proc.kill('SIGTERM');
    t.is(await child.exited, 0, round);
    // the cache is written at exit: hundreds of modules (the kernel, the plugins, their libraries)
    t.true(filesUnder(cache) > 100, `${round}: ${filesUnder(cache)} cache files`);
  }
});
