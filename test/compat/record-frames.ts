/**
 * Record what EVA ICS 3.3.2 sends through the notifiers its uc-notifier made
 * (fixtures/eva332-notifiers/files: a JSON web hook on 127.0.0.1:28813 and an
 * MQTT notifier on 127.0.0.1:28814) when frames.ts's events happen, into
 * fixtures/eva332-notifiers/frames.json. Needs a broker on 28814
 * (`mosquitto -p 28814`); starts the receiver, then runs --start (a command
 * that starts the 3.3.2 controller with those files, e.g.
 * NOTIFIERS=test/compat/fixtures/eva332-notifiers/files test/compat/eva33-fresh.sh WORK).
 *
 *   node dist/test/compat/record-frames.js --start "CMD" --stop "CMD" [--url URL] [--master KEY]
 */
import fs from 'node:fs';
import http from 'node:http';
import { execSync } from 'node:child_process';
import mqtt from 'mqtt';
import { SETUP } from './calls';
import { FRAMES, hookFrame, mqttFrame, trigger, type Frames } from './frames';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : dflt;
}

async function main(): Promise<void> {
  const frames: Frames = { hook: [], mqtt: [] };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      frames.hook.push(hookFrame(req.method ?? '', req.url ?? '/', String(req.headers['content-type'] ?? ''), req.headers.authorization, Buffer.concat(chunks).toString('utf8')));
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"result":"OK"}');
    });
  });
  await new Promise<void>((r) => server.listen(28813, '127.0.0.1', r));
  const client = await mqtt.connectAsync({ host: '127.0.0.1', port: 28814, protocolVersion: 4 });
  client.on('message', (topic, payload, packet) => frames.mqtt.push(mqttFrame(topic, payload.toString(), packet.retain)));
  await client.subscribeAsync('#', { qos: 2 });
  execSync(arg('start', 'false'), { stdio: 'inherit' });
  await new Promise((r) => setTimeout(r, 2000));
  await trigger(arg('url', 'http://127.0.0.1:28812'), arg('master', SETUP.secrets.master));
  await new Promise((r) => setTimeout(r, 4000));
  // the server events of a stop
  if (process.argv.includes('--stop')) execSync(arg('stop', 'false'), { stdio: 'inherit' });
  await new Promise((r) => setTimeout(r, 3000));
  await client.endAsync();
  server.close();
  fs.writeFileSync(FRAMES, `${JSON.stringify(frames, null, 2)}\n`);
  console.log(`${frames.hook.length} web hook requests, ${frames.mqtt.length} MQTT messages recorded into ${FRAMES}`);
}

if (require.main === module) {
  main().then(() => process.exit(0), (e: unknown) => { console.error(e); process.exit(1); });
}
