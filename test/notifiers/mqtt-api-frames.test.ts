import test, { type ExecutionContext } from 'ava';
import crypto from 'node:crypto';
import { spawnSync } from 'node:child_process';
import mqtt from 'mqtt';
import { decode, encode } from '@msgpack/msgpack';
import { startBroker } from '../helpers/broker';
import { Keys } from '../helpers/controller';
import { controllerLog } from '../helpers/notifiers';
import { until } from '../helpers/wait';
import { ReplayGuard } from '../../plugins/notifiers/mqtt/replay';
import { controllerWith, mqttNotifier } from '../helpers/mqtt-notifier';
import { binaryFrame, fernet33, open33 } from '../helpers/mqtt-api-client';
import { skipWhen } from '../helpers/tools';

// the 3.3 client: ./mqtt-api-client.ts

function unfernet33(keyValue: string, token: string): string {
  t0.regex(token, /^[A-Za-z0-9_-]+=*$/, 'url-safe base64');
  t0.is(token.length % 4, 0, 'padded, as Python reads it');
  const key = crypto.createHash('sha256').update(keyValue).digest();
  const raw = Buffer.from(token.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  const mac = crypto.createHmac('sha256', key.subarray(0, 16)).update(raw.subarray(0, -32)).digest();
  if (raw[0] !== 0x80 || !mac.equals(raw.subarray(-32))) throw new Error('answer token does not verify');
  const d = crypto.createDecipheriv('aes-128-cbc', key.subarray(16), raw.subarray(9, 25));
  return Buffer.concat([d.update(raw.subarray(25, -32)), d.final()]).toString('utf8');
}

// the test context of the running test, for checks inside the helpers above
let t0: ExecutionContext;

const BASE = 'sp/controller/uc/testhost/api';

/**
 * A controller with the MQTT API on, and a raw MQTT client (payloads kept as
 * bytes) that sends requests and waits for the answer to an id.
 */
async function apiSetup(t: ExecutionContext) {
  t0 = t;
  const broker = await startBroker(t);
  const client = await mqtt.connectAsync({ host: broker.host, port: broker.port, protocolVersion: 4, reconnectPeriod: 0 });
  t.teardown(() => client.endAsync(true));
  const got: { topic: string; payload: Buffer }[] = [];
  client.on('message', (topic, payload) => got.push({ topic, payload }));
  await client.subscribeAsync(`${BASE}/response/#`, { qos: 1 });
  const c = await controllerWith(t, { m1: mqttNotifier(broker, { api_enabled: true, events: [] }) });
  await until('connected', async () => (await c.ok('get_notifier', { i: 'm1' })).stats.connected, 10_000);
  const send = (payload: Buffer | string) => client.publishAsync(`${BASE}/request`, payload, { qos: 1 });
  const answer = async (id: string) => {
    const m = await until(`answer ${id}`, () => got.find((x) => x.topic === `${BASE}/response/${id}`), 10_000);
    return m.payload;
  };
  return { c, got, send, answer };
}

test('encrypted MQTT API frames of 3.3: binary and text answered encrypted; wrong key, tampered, replayed and plain frames dropped and counted', async (t) => {
  const { c, got, send, answer } = await apiSetup(t);
  const binaryAnswer = async (rid: Buffer, keyValue = Keys.master) => {
    const a = await answer(rid.toString('hex'));
    t.deepEqual([...a.subarray(0, 2)], [0x00, 0xc8]);
    return decode(open33(keyValue, a.subarray(2))) as any;
  };
  const rpc = (method: string, params: Record<string, unknown> = {}, id: unknown = 1) => ({ jsonrpc: '2.0', method, params, id });

  // binary, as 3.3's LM and SFA call a UC: k inside the payload, the request id random
  const rid1 = crypto.randomBytes(16);
  const frame1 = binaryFrame('masterkey', Keys.master, rid1, rpc('test', { k: Keys.master }));
  await send(frame1);
  const r1 = await binaryAnswer(rid1);
  t.is(r1.id, 1);
  t.is(r1.result.product_code, 'uc');
  // without k the frame's key calls; a batch answers as a list
  const rid2 = crypto.randomBytes(16);
  await send(binaryFrame('masterkey', Keys.master, rid2, [rpc('set_cvar', { i: 'x', v: 'sealed' }, 'a'), rpc('get_cvar', { i: 'x' }, 'b')]));
  const r2 = await binaryAnswer(rid2);
  t.deepEqual(r2.map((x: any) => x.id), ['a', 'b']);
  t.deepEqual(r2[1].result, { x: 'sealed' });
  // a k inside that is not the frame's key is refused; a key bound to an address cannot call over a broker
  const rid3 = crypto.randomBytes(16);
  await send(binaryFrame('masterkey', Keys.master, rid3, rpc('test', { k: Keys.ops })));
  t.is((await binaryAnswer(rid3)).error.code, 2);
  const rid4 = crypto.randomBytes(16);
  await send(binaryFrame('ops', Keys.ops, rid4, rpc('test', {})));
  t.is((await binaryAnswer(rid4, Keys.ops)).error.code, 2);

  // text: |key id|Fernet token of "<call id>|<JSON>", answered with 200|<token>
  const text1 = `|masterkey|${fernet33(Keys.master, `call-1|${JSON.stringify(rpc('test', { k: Keys.master }, 7))}`)}`;
  await send(text1);
  const a1 = (await answer('call-1')).toString('utf8');
  t.true(a1.startsWith('200|'));
  const res1 = JSON.parse(unfernet33(Keys.master, a1.slice(4)));
  t.is(res1.id, 7);
  t.true(res1.result.ok);

  // dropped, never answered: a wrong key, a tampered frame, replays, a stale token, an unknown key id, plain JSON
  const ridWrong = crypto.randomBytes(16);
  await send(binaryFrame('masterkey', 'not-the-key', ridWrong, rpc('test', {})));
  const ridTampered = crypto.randomBytes(16);
  const tampered = binaryFrame('masterkey', Keys.master, ridTampered, rpc('test', {}));
  tampered[tampered.length - 40] ^= 1;
  await send(tampered);
  await send(`|masterkey|${fernet33('not-the-key', `call-wrong|${JSON.stringify(rpc('test'))}`)}`);
  const flipped = fernet33(Keys.master, `call-flip|${JSON.stringify(rpc('test'))}`);
  await send(`|masterkey|${flipped.slice(0, 30)}${flipped[30] === 'A' ? 'B' : 'A'}${flipped.slice(31)}`);
  await send(binaryFrame('nobody', Keys.master, crypto.randomBytes(16), rpc('test', {})));
  await send(frame1); // replay of a binary frame
  await send(text1); // replay of a text frame
  await send(`|masterkey|${fernet33(Keys.master, `call-old|${JSON.stringify(rpc('test'))}`, Math.floor(Date.now() / 1000) - 3600)}`);
  await send(JSON.stringify(rpc('test', { k: Keys.master }, 'plain')));
  // a good frame after them all: once it is answered, the ones before it were handled
  const ridLast = crypto.randomBytes(16);
  await send(binaryFrame('masterkey', Keys.master, ridLast, rpc('test', {})));
  t.true((await binaryAnswer(ridLast)).result.ok);
  const api = await until('drops counted', async () => {
    const s = (await c.ok('get_notifier', { i: 'm1' })).stats.api;
    return s.dropped >= 9 && s;
  }, 10_000);
  t.like(api, { bad_frames: 5, replays: 3, dropped: 9 });
  const answered = got.map((m) => m.topic.slice(BASE.length + '/response/'.length)).sort();
  t.deepEqual(answered, [rid1, rid2, rid3, rid4, ridLast].map((r) => r.toString('hex')).concat('call-1').sort());
  const log = controllerLog(c.dir);
  t.regex(log, /dropped: plain JSON RPC is off \(api_plain_json\)/);
  t.regex(log, /dropped: an encrypted frame that does not authenticate/);
  t.regex(log, /dropped: a replayed or stale encrypted frame/);
  t.false(log.includes(Keys.master), 'no key in the log');
});

/**
 * Python's cryptography package (what 3.3 ran on), keyed as 3.3 keyed it:
 * Fernet(base64(sha256(key))) for text frames, and pyaltt2's AES-CBC + HMAC
 * with h = sha512(key), AES key h[:32], HMAC key h[:-32] for binary ones.
 * Bytes go in and out as hex (binary) or text (Fernet).
 */
const PYTHON_33 = [
  'import base64,hashlib,hmac,os,sys',
  'from cryptography.fernet import Fernet',
  'from cryptography.hazmat.primitives import padding',
  'from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes',
  'mode, key, data = sys.argv[1], sys.argv[2].encode(), sys.stdin.read()',
  'f = Fernet(base64.b64encode(hashlib.sha256(key).digest()))',
  'h = hashlib.sha512(key).digest()',
  'def seal(raw):',
  '    p = padding.PKCS7(128).padder(); raw = p.update(raw) + p.finalize()',
  '    iv = os.urandom(16); e = Cipher(algorithms.AES(h[:32]), modes.CBC(iv)).encryptor()',
  '    val = iv + e.update(raw) + e.finalize()',
  '    return val + hmac.new(h[:-32], val, hashlib.sha256).digest()',
  'def unseal(enc):',
  '    assert hmac.compare_digest(hmac.new(h[:-32], enc[:-32], hashlib.sha256).digest(), enc[-32:])',
  '    d = Cipher(algorithms.AES(h[:32]), modes.CBC(enc[:16])).decryptor(); raw = d.update(enc[16:-32]) + d.finalize()',
  '    return raw[:-raw[-1]]',
  'out = {"enc": lambda: f.encrypt(data.encode()).decode(), "dec": lambda: f.decrypt(data.encode()).decode(),',
  '       "seal": lambda: seal(bytes.fromhex(data)).hex(), "open": lambda: unseal(bytes.fromhex(data)).hex()}[mode]()',
  'sys.stdout.write(out)',
].join('\n');

function python33(mode: 'enc' | 'dec' | 'seal' | 'open', keyValue: string, data: string): string {
  const r = spawnSync('python3', ['-c', PYTHON_33, mode, keyValue], { input: data, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python3: ${r.stderr}`);
  return r.stdout;
}
const hasPythonCrypto = spawnSync('python3', ['-c', 'import cryptography.fernet, cryptography.hazmat.primitives.ciphers']).status === 0;

// declared skipped where python3 has no cryptography package (CI counts skips apart)
skipWhen(!hasPythonCrypto && 'needs python3 with the cryptography package')('binary and text frames interoperate with Python\'s cryptography, keyed as 3.3 keys it', async (t) => {
  const { send, answer } = await apiSetup(t);
  const token = python33('enc', Keys.master, `py-1|${JSON.stringify({ jsonrpc: '2.0', method: 'test', params: { k: Keys.master }, id: 'p' })}`);
  await send(`|masterkey|${token}`);
  const a = (await answer('py-1')).toString('utf8');
  t.true(a.startsWith('200|'));
  const res = JSON.parse(python33('dec', Keys.master, a.slice(4)));
  t.is(res.id, 'p');
  t.is(res.result.product_code, 'uc');

  const rid = crypto.randomBytes(16);
  const plain = Buffer.concat([rid, Buffer.from(encode({ jsonrpc: '2.0', method: 'test', params: { k: Keys.master }, id: 'b' }))]);
  const sealed = Buffer.from(python33('seal', Keys.master, plain.toString('hex')), 'hex');
  await send(Buffer.concat([Buffer.from([0, 2]), Buffer.from('masterkey'), Buffer.from([0]), sealed]));
  const b = await answer(rid.toString('hex'));
  t.deepEqual([...b.subarray(0, 2)], [0x00, 0xc8]);
  const bres = decode(Buffer.from(python33('open', Keys.master, b.subarray(2).toString('hex')), 'hex')) as any;
  t.is(bres.id, 'b');
  t.is(bres.result.product_code, 'uc');
});

test('the replay memory is bounded: past it the oldest ids are forgotten; the token window is both ways', (t) => {
  const g = new ReplayGuard(3, 600);
  for (const id of ['a', 'b', 'c']) t.true(g.fresh(id));
  t.false(g.fresh('a'));
  t.true(g.fresh('d')); // a fourth: 'a' is forgotten
  t.is(g.size, 3);
  t.true(g.fresh('a'), 'forgotten at the bound, so taken again');
  t.false(g.fresh('d'));
  t.true(g.inWindow(1000, 1500));
  t.false(g.inWindow(1000, 1601));
  t.false(g.inWindow(2101, 1500), 'a token from the future beyond the skew allowed');
});
