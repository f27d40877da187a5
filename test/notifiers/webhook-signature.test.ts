import test from 'ava';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { execFile } from 'node:child_process';
import { Keys, makeDir, startController } from '../helpers/controller';
import { runCli } from '../helpers/cli';
import { Receiver, type ReceivedRequest } from '../helpers/receiver';
import { notifierFiles, stateEvent, stats, subscribeAll } from '../helpers/notifiers';
import { until } from '../helpers/wait';

const k = Keys.master;
const secret = (fill: number) => `whsec_${Buffer.alloc(32, fill).toString('base64')}`;
const NEW = secret(1);
const OLD = secret(2);

/**
 * A receiver's check written from the Standard Webhooks text alone, in
 * Python's standard library: HMAC-SHA256 of "id.timestamp.body" under the
 * decoded secret, any `v1,` entry matching, the timestamp within 5 minutes.
 */
const VERIFY = `
import sys, json, hmac, hashlib, base64
out = []
for c in json.load(sys.stdin):
    key = base64.b64decode(c["secret"][len("whsec_"):])
    mac = base64.b64encode(hmac.new(key, f'{c["id"]}.{c["timestamp"]}.{c["body"]}'.encode(), hashlib.sha256).digest()).decode()
    fresh = abs(c["now"] - int(c["timestamp"])) <= 300
    out.append(fresh and any(e.startswith("v1,") and hmac.compare_digest(e[3:], mac) for e in c["signature"].split(" ")))
print(json.dumps(out))
`;

interface Check { secret: string; id: string; timestamp: string; body: string; signature: string; now: number }

function verify(checks: Check[]): Promise<boolean[]> {
  return new Promise((resolve, reject) => {
    const child = execFile('python3', ['-c', VERIFY], { timeout: 30_000 }, (err, out) => (err ? reject(err) : resolve(JSON.parse(out))));
    child.stdin!.end(JSON.stringify(checks));
  });
}

/** The check of a received request with `secret`, as its receiver sees it now. */
function checkOf(r: ReceivedRequest, secretText: string, change: Partial<Check> = {}): Check {
  return {
    secret: secretText,
    id: String(r.headers['webhook-id']),
    timestamp: String(r.headers['webhook-timestamp']),
    body: r.body,
    signature: String(r.headers['webhook-signature']),
    now: Math.floor(Date.now() / 1000),
    ...change,
  };
}

test('a signed json hook: every frame verifies with the secret; a tampered body, an old timestamp or another secret do not', async (t) => {
  const rcv = await Receiver.start(t);
  const { client } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, signing_secret: NEW, events: subscribeAll } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/temp', 1, '21.5')] });
  const [testFrame, frame] = await rcv.waitFor(2);
  t.is(testFrame.json.subject, 'test');
  t.regex(String(frame.headers['webhook-id']), /^msg_[A-Za-z0-9_-]+$/);
  t.not(frame.headers['webhook-id'], testFrame.headers['webhook-id']);
  t.regex(String(frame.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]+=*$/);
  const results = await verify([
    checkOf(testFrame, NEW),
    checkOf(frame, NEW),
    checkOf(frame, NEW, { body: frame.body.replace('21.5', '99.9') }),
    checkOf(frame, NEW, { now: Math.floor(Date.now() / 1000) + 3600 }),
    checkOf(frame, OLD),
  ]);
  t.deepEqual(results, [true, true, false, false, false]);
});

test('a retried frame keeps its webhook-id and is signed again with its new timestamp', async (t) => {
  const rcv = await Receiver.start(t);
  rcv.answer = (_r, n) => (n === 1 ? { status: 500, body: 'down' } : { body: '{"result":"OK"}' });
  const { client } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, retry_delay: 0.05, signing_secret: NEW, events: subscribeAll } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/a'), stateEvent('sensor:env/b')] });
  const [first, again] = await rcv.waitFor(2);
  t.is(first.body, again.body);
  t.is(first.headers['webhook-id'], again.headers['webhook-id']);
  t.deepEqual(await verify([checkOf(first, NEW, { now: Number(first.headers['webhook-timestamp']) }), checkOf(again, NEW)]), [true, true]);
  await until('sent 2', async () => (await stats(client, k, 'hook')).sent === 2);
  // a new event is another frame
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/c')] });
  const [, , third] = await rcv.waitFor(3);
  t.not(third.headers['webhook-id'], first.headers['webhook-id']);
});

test('during a rotation both secrets sign; after signing_previous_until only the new one', async (t) => {
  const rcv = await Receiver.start(t);
  const now = Math.floor(Date.now() / 1000);
  const { client } = await startController(t, {
    files: notifierFiles({
      rotating: { type: 'http-post', uri: rcv.uri, skip_test: true, signing_secret: NEW, signing_secret_previous: OLD, signing_previous_until: now + 3600, events: subscribeAll },
      rotated: { type: 'http', uri: `${rcv.uri}?after`, skip_test: true, signing_secret: NEW, signing_secret_previous: OLD, signing_previous_until: now - 1, events: subscribeAll },
    }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('unit:a/b')] });
  const got = await rcv.waitFor(2);
  const rotating = got.find((r) => r.method === 'POST')!;
  const rotated = got.find((r) => r.method === 'GET')!;
  t.is(String(rotating.headers['webhook-signature']).split(' ').length, 2);
  t.is(String(rotated.headers['webhook-signature']).split(' ').length, 1);
  // the GET type signs its query string (it has no body)
  const query = rotated.url.search.slice(1);
  t.deepEqual(
    await verify([checkOf(rotating, NEW), checkOf(rotating, OLD), checkOf(rotated, NEW, { body: query }), checkOf(rotated, OLD, { body: query })]),
    [true, true, true, false],
  );
});

test('an unsigned hook sends no signature (3.3 receivers see the body they always saw); a durable one still names its frame', async (t) => {
  const rcv = await Receiver.start(t);
  const { client } = await startController(t, {
    files: notifierFiles({
      durable: { type: 'json', uri: `${rcv.uri}?durable`, skip_test: true, events: subscribeAll },
      memory: { type: 'json', uri: `${rcv.uri}?memory`, skip_test: true, durable: false, events: subscribeAll },
    }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('unit:a/b')] });
  const got = await rcv.waitFor(2);
  const durable = got.find((r) => r.url.search === '?durable')!;
  const memory = got.find((r) => r.url.search === '?memory')!;
  t.regex(String(durable.headers['webhook-id']), /^msg_/);
  t.is(memory.headers['webhook-id'], undefined);
  for (const r of [durable, memory]) {
    t.is(r.headers['webhook-signature'], undefined);
    t.is(r.headers['webhook-timestamp'], undefined);
  }
});

test('the command line refuses a malformed secret by name, takes a whsec_ one, and never shows it', async (t) => {
  const dir = makeDir(t);
  const made = await runCli(t, ['--dir', dir, 'create', 'hook', 'json:http://127.0.0.1:1/hook']);
  t.is(made.code, 0, made.err);
  const bad = `whsec_${crypto.randomBytes(8).toString('base64')}`;
  const refused = await runCli(t, ['--dir', dir, 'set', 'hook', 'signing_secret', bad]);
  t.not(refused.code, 0);
  t.regex(refused.err, /signing_secret must hold 24 to 64 bytes/);
  t.false((refused.out + refused.err).includes(bad));
  const lonePrevious = await runCli(t, ['--dir', dir, 'set', 'hook', 'signing_secret_previous', OLD]);
  t.regex(lonePrevious.err, /signing_secret_previous needs signing_secret/);
  const taken = await runCli(t, ['--dir', dir, 'set', 'hook', 'signing_secret', NEW]);
  t.is(taken.code, 0, taken.err);
  t.regex(taken.out, /signing_secret = <hidden>/);
  const props = await runCli(t, ['--dir', dir, 'props', 'hook']);
  t.regex(props.out, /^signing_secret\s+<hidden>$/m);
  const config = await runCli(t, ['--dir', dir, 'get_config', 'hook']);
  t.is(JSON.parse(config.out).signing_secret, '<hidden>');
});

/** The code block of `lang` in the README's section on signed web hooks. */
function readmeBlock(lang: string): string {
  const readme = fs.readFileSync(path.resolve(__dirname, '..', '..', '..', 'plugins', 'notifiers', 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Signed web hooks'));
  const m = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(section);
  if (!m) throw new Error(`no ${lang} block in the README section`);
  return m[1];
}

test("the README's Node and Python receivers accept a real signed frame and refuse a tampered one", async (t) => {
  const rcv = await Receiver.start(t);
  const { client } = await startController(t, {
    files: notifierFiles({ hook: { type: 'json', uri: rcv.uri, skip_test: true, signing_secret: NEW, events: subscribeAll } }),
  });
  await client.ok('t_emit', { k, s: 'state', d: [stateEvent('sensor:env/temp', 1, '21.5')] });
  const [frame] = await rcv.waitFor(1);
  const headers = { 'webhook-id': frame.headers['webhook-id'], 'webhook-timestamp': frame.headers['webhook-timestamp'], 'webhook-signature': frame.headers['webhook-signature'] };
  const tampered = frame.body.replace('21.5', '99.9');

  const node = vm.runInNewContext(`${readmeBlock('js')}; verifyWebhook`, { require, Buffer, Date }) as (s: string, h: object, b: string) => boolean;
  t.deepEqual([node(NEW, headers, frame.body), node(NEW, headers, tampered), node(OLD, headers, frame.body)], [true, false, false]);

  const driver = `${readmeBlock('python')}
import json, sys
c = json.load(sys.stdin)
print(json.dumps([verify_webhook(s, c["headers"], b) for s, b in c["cases"]]))
`;
  const python = await new Promise<boolean[]>((resolve, reject) => {
    const child = execFile('python3', ['-c', driver], { timeout: 30_000 }, (err, out) => (err ? reject(err) : resolve(JSON.parse(out))));
    child.stdin!.end(JSON.stringify({ headers, cases: [[NEW, frame.body], [NEW, tampered], [OLD, frame.body]] }));
  });
  t.deepEqual(python, [true, false, false]);
});
