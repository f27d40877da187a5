import 'reflect-metadata';
import { Dispatcher, type CallMeta } from '../../core/dispatch';
import { BatchAnswer, encodeResponse, packed, unpacked } from '../../core/http/encode';
import { rpcCall } from '../../core/rpc';
import { Keys, startController, type Running } from '../helpers/controller';
import { SUITE_PLUGIN } from './plugin';
import { FC, fc, jsonValue, same, testProp } from './fast-check';

/**
 * JSON RPC 2.0 batches (section 6): a batch answers what its requests
 * answer one by one, in order, without the notifications' (nothing at all,
 * 202, when every request is one). Requests of every kind — calls of
 * functions without state (echo_value, subtract), of unknown functions,
 * without a method, with params that are no object, invalid ids, invalid
 * requests, notifications — through a real controller's /jrpc in JSON and
 * in MessagePack (a few hundred batches), and in process, the requests
 * through the controller's dispatcher and the batch answer's encoding (the
 * bulk of the cases).
 */
let server: Promise<Running> | undefined;
const controller = () => (server ??= startController(undefined, { files: { 'plugins/conformance.js': SUITE_PLUGIN } }));
testProp.after(async () => { if (server) await (await server).stop(); });

const id = fc.oneof(
  { arbitrary: fc.oneof(fc.string({ maxLength: 8 }), fc.integer()), weight: 6 },
  // notifications
  { arbitrary: fc.constantFrom(undefined, null), weight: 2 },
  // no id: answered with id null
  { arbitrary: fc.constantFrom(true, 1.5, {}, []), weight: 1 },
);
const call = fc.oneof(
  fc.record({ method: fc.constant('echo_value'), params: fc.record({ v: jsonValue(2) }) }),
  fc.record({ method: fc.constant('subtract'), params: fc.record({ minuend: fc.integer(), subtrahend: fc.oneof(fc.integer(), fc.string({ maxLength: 3 })) }) }),
  fc.record({ method: fc.constantFrom('no_such_function', '', 'echo_value'), params: fc.oneof(fc.constant(undefined), fc.constant([1]), fc.constant('p'), fc.constant({})) }),
);
const request = fc.oneof(
  { arbitrary: fc.tuple(call, id).map(([c, i]) => (i === undefined ? { jsonrpc: '2.0', ...c } : { jsonrpc: '2.0', ...c, id: i })), weight: 8 },
  // invalid requests: another version, a method that is no string, no object at all
  { arbitrary: fc.tuple(call, id).map(([c, i]) => ({ jsonrpc: '1.0', ...c, id: i })), weight: 1 },
  { arbitrary: id.map((i) => ({ jsonrpc: '2.0', method: 5, id: i })), weight: 1 },
  { arbitrary: fc.constantFrom(1, 'x', null, true), weight: 1 },
);
const batch = fc.array(request, { minLength: 1, maxLength: 6 });

/** undefined members left out, as JSON and the controller's MessagePack leave them. */
const defined = (v: unknown) => JSON.parse(JSON.stringify(v)) as unknown;

async function post(url: string, body: unknown, isPacked: boolean): Promise<{ status: number; answer: unknown }> {
  const r = await fetch(`${url}/jrpc`, {
    method: 'POST',
    headers: { 'Content-Type': isPacked ? 'application/msgpack' : 'application/json', 'X-Auth-Key': Keys.master },
    body: isPacked ? packed(body) : JSON.stringify(body),
  });
  const raw = Buffer.from(await r.arrayBuffer());
  return { status: r.status, answer: raw.length === 0 ? undefined : isPacked ? unpacked(raw) : JSON.parse(raw.toString('utf8')) };
}

testProp(`${FC} › JSON RPC batches › through /jrpc, a batch answers what its requests answer one by one`, [
  fc.array(request.map(defined), { minLength: 1, maxLength: 6 }), fc.boolean(),
], async (t, reqs, isPacked) => {
  const { url } = await controller();
  const whole = await post(url, reqs, isPacked);
  const alone: unknown[] = [];
  for (const r of reqs) {
    const one = await post(url, r, isPacked);
    if (one.answer === undefined) t.is(one.status, 202, 'a notification alone');
    else alone.push(one.answer);
  }
  if (alone.length === 0) {
    t.is(whole.status, 202, 'a batch of notifications');
    t.is(whole.answer, undefined);
  } else {
    t.is(whole.status, 200);
    same(t, whole.answer, alone);
  }
}, { numRuns: 150 });

testProp(`${FC} › JSON RPC batches › in process, a batch's answer is its requests' answers one by one, encoded as each alone`, [
  batch, fc.boolean(),
], async (t, reqs, isPacked) => {
  const { ctl } = await controller();
  const dispatcher = ctl.get(Dispatcher);
  const meta: CallMeta = { ip: '127.0.0.1', transport: 'jrpc', headers: {}, headerKey: Keys.master };
  const out = new BatchAnswer(isPacked, 1 << 20);
  const alone: unknown[] = [];
  for (const r of reqs) {
    const res = await rpcCall(dispatcher, r, meta);
    out.add(res);
    const again = await rpcCall(dispatcher, r, meta);
    if (again) {
      const body = encodeResponse(isPacked, again, 1 << 20);
      alone.push(isPacked ? unpacked(typeof body === 'string' ? Buffer.from(body, 'latin1') : body) : JSON.parse(body.toString()));
    } else {
      t.is(res, undefined, 'a notification answers nothing');
    }
  }
  if (alone.length === 0) return t.true(out.empty);
  const { pieces } = out.body();
  const raw = Buffer.concat(pieces.map((p) => (typeof p === 'string' ? Buffer.from(p, isPacked ? 'latin1' : 'utf8') : p)));
  same(t, isPacked ? unpacked(raw) : JSON.parse(raw.toString('utf8')), alone);
}, { numRuns: 3_000 });
