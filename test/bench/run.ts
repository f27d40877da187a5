import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

/**
 * `npm run bench`: every benchmark of test/bench/ one after another (api,
 * api-inproc, scaling, updates, footprint, events, mqtt, mqtt-publish, sparkplug, commit, history-writes, history-query, postgres, apilog-postgres, locks-postgres, userdb-postgres, failover, influxdb, stream, stream-ring, webhooks, hook-parts, console, console-history, mcp — those that exist), each in its own process. `npm run bench
 * -- api` runs one; `webhooks-hour` (an hour of wall time) and `outage` (360 000 events through an outage) run only when named.
 */
const wanted = process.argv.slice(2);
let failed = 0;
/** benchmarks that run only when named (`webhooks-hour` takes a wall-clock hour, `outage` minutes and much memory) */
const onRequest = ['webhooks-hour', 'outage'];
for (const name of ['api', 'api-inproc', 'scaling', 'updates', 'footprint', 'events', 'mqtt', 'mqtt-publish', 'sparkplug', 'commit', 'history-writes', 'history-query', 'postgres', 'apilog-postgres', 'locks-postgres', 'userdb-postgres', 'failover', 'influxdb', 'stream', 'stream-ring', 'webhooks', 'hook-parts', 'console', 'console-history', 'mcp', ...onRequest]) {
  if (!wanted.length && onRequest.includes(name)) continue;
  if (wanted.length && !wanted.includes(name)) continue;
  const file = path.join(__dirname, `${name}.js`);
  if (!fs.existsSync(file)) continue;
  console.log(`\n## ${name}`);
  const r = spawnSync(process.execPath, [file], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
