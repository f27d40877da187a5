import { decode, encode } from '@msgpack/msgpack';
// the MQTT client library's own packet parser (the mqtt package's)
import { parser as packetParser, type IPublishPacket } from 'mqtt-packet';
import {
  BadFrame, binaryKey, fernetDecrypt, fernetEncrypt, fernetKey, open, seal, splitBinary, splitText,
} from '../../plugins/notifiers/mqtt/frames';
import { PublishFrames } from '../../plugins/notifiers/mqtt/publish-frames';
import { binaryFrame, fernet33, open33, seal33 } from '../helpers/mqtt-api-client';
import { FC, fc, jsonValue, same, testProp } from './fast-check';

/**
 * The MQTT API's frames (plugins/notifiers/mqtt/frames.ts) against the 3.3
 * client written from the protocol alone (test/helpers/mqtt-api-client.ts):
 * what either seals the other opens, for any key and payload; a frame
 * changed anywhere, cut short, grown, or made of any bytes is refused as a
 * BadFrame (dropped and counted), never another error (which would escape
 * the broker's message handler). And the PUBLISH packets the notifiers
 * frame themselves (publish-frames.ts) read back, through the MQTT client
 * library's own parser, as the topics, payloads, QoS, message ids, retain
 * flags and MQTT 5 properties written.
 */

const keyValue = fc.string({ minLength: 1, maxLength: 64 });
const keyId = fc.string({ unit: 'binary', minLength: 1, maxLength: 32 }).filter((k) => !k.includes('\0'));
const plain = fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b));

/** Only BadFrame may come out of reading a frame. */
function refused(t: import('ava').ExecutionContext, read: () => unknown, what: string): boolean {
  try {
    read();
    return false;
  } catch (err) {
    if (err instanceof BadFrame) return true;
    t.fail(`${what}: ${err instanceof Error ? `${err.constructor.name}: ${err.message}` : String(err)}`);
    return true;
  }
}

testProp(`${FC} › MQTT API frames › binary: what the 3.3 client seals opens, and what the controller seals the 3.3 client opens`, [keyValue, plain], (t, k, p) => {
  same(t, open(binaryKey(k), seal33(k, p)), p);
  same(t, open33(k, seal(binaryKey(k), p)), p);
}, { numRuns: 4_000 });

testProp(`${FC} › MQTT API frames › binary: a frame's key id, request id and MessagePack request read back`, [
  keyId, keyValue, fc.uint8Array({ minLength: 16, maxLength: 16 }), jsonValue(2),
], (t, id, k, rid, payload) => {
  const { keyId: gotId, sealed } = splitBinary(binaryFrame(id, k, Buffer.from(rid), payload));
  t.is(gotId, id);
  const p = open(binaryKey(k), sealed);
  same(t, p.subarray(0, 16), Buffer.from(rid));
  same(t, decode(p.subarray(16)), decode(encode(payload)));
}, { numRuns: 3_000 });

testProp(`${FC} › MQTT API frames › text: a 3.3 Fernet token opens with its time; the controller's tokens open as written`, [
  keyValue, fc.string({ unit: 'binary', maxLength: 100 }), fc.integer({ min: 0, max: 2 ** 33 }),
], (t, k, text, time) => {
  const theirs = fernetDecrypt(fernetKey(k), fernet33(k, text, time));
  t.is(theirs.plain.toString('utf8'), text);
  t.is(theirs.time, time);
  const ours = fernetDecrypt(fernetKey(k), fernetEncrypt(fernetKey(k), Buffer.from(text), time * 1000));
  t.is(ours.plain.toString('utf8'), text);
  t.is(ours.time, time);
  same(t, splitText(`|${'id'}|${fernet33(k, text, time)}`).keyId, 'id');
}, { numRuns: 3_000 });

/** A valid binary frame and a change to it: a byte changed, bytes cut off the end, or bytes added. */
const changedBinary = fc.tuple(keyValue, plain, fc.nat(), fc.integer({ min: 1, max: 255 }), fc.uint8Array({ minLength: 1, maxLength: 40 }), fc.constantFrom('flip', 'cut', 'grow'))
  .map(([k, p, at, x, more, how]) => {
    const frame = binaryFrame('kid', k, Buffer.alloc(16, 7), p.toString('latin1'));
    const i = 6 + (at % (frame.length - 6)); // past 0x00 0x02 "kid" 0x00: in the sealed part
    const changed = Buffer.from(frame);
    if (how === 'flip') changed[i] ^= x;
    return { k, frame: how === 'flip' ? changed : how === 'cut' ? frame.subarray(0, i) : Buffer.concat([frame, more]), how };
  });

testProp(`${FC} › MQTT API frames › binary: a frame changed in its sealed part, cut short or grown is a BadFrame`, [changedBinary], (t, { k, frame, how }) => {
  t.true(refused(t, () => open(binaryKey(k), splitBinary(frame).sealed), how), `${how}: opened`);
}, { numRuns: 6_000 });

/** A valid token and a change to it, in its text. */
const changedToken = fc.tuple(keyValue, fc.string({ maxLength: 60 }), fc.nat(), fc.string({ unit: 'binary', minLength: 1, maxLength: 3 }), fc.constantFrom('replace', 'cut', 'grow'))
  .map(([k, text, at, s, how]) => {
    const token = fernet33(k, text);
    const i = at % token.length;
    const changed = how === 'replace' ? token.slice(0, i) + s + token.slice(i + 1) : how === 'cut' ? token.slice(0, i) : token + s;
    return { k, text, token, changed, how };
  });

testProp(`${FC} › MQTT API frames › text: a token changed anywhere is a BadFrame, or opens to the same text (base64's unused bits)`, [changedToken], (t, { k, text, token, changed, how }) => {
  if (changed === token) return t.pass();
  let opened: string | undefined;
  const bad = refused(t, () => { opened = fernetDecrypt(fernetKey(k), splitText(`|kid|${changed}`).token).plain.toString('utf8'); }, how);
  if (!bad) t.is(opened, text, `${how}: ${JSON.stringify(changed)} opened to another text`);
  else t.pass();
}, { numRuns: 6_000 });

testProp(`${FC} › MQTT API frames › any bytes and any text: a BadFrame, never another error`, [
  fc.uint8Array({ maxLength: 120 }).map((b) => Buffer.concat([Buffer.from([0, 2]), b])), fc.string({ unit: 'binary', maxLength: 160 }), keyValue,
], (t, bytes, text, k) => {
  t.true(refused(t, () => open(binaryKey(k), splitBinary(bytes).sealed), 'binary'), 'random bytes opened');
  t.true(refused(t, () => fernetDecrypt(fernetKey(k), splitText(`|kid|${text}`).token), 'text'), 'random text opened');
  t.true(refused(t, () => fernetDecrypt(fernetKey(k), splitText(text).token), 'frame'), 'random frame opened');
}, { numRuns: 6_000 });

/** MQTT topics (UTF-8, no NUL, no wildcard: a publication's) and payloads (bytes, or text written as UTF-8). */
const topic = fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }).filter((s) => !/[\0#+]/.test(s) && !/[\uD800-\uDFFF]/.test(s));
const text = fc.string({ unit: 'binary', maxLength: 300 }).filter((s) => !/[\uD800-\uDFFF]/.test(s));
const payload = fc.oneof(fc.uint8Array({ maxLength: 300 }), text);
/** MQTT 5 properties as the mqtt notifier sets them (one object per subject, several publications share it) */
const propertySets = fc.array(fc.record({
  userProperties: fc.dictionary(fc.constantFrom('space', 'subject', 'x'), text.filter((s) => s.length < 40), { minKeys: 1 }),
  messageExpiryInterval: fc.option(fc.integer({ min: 1, max: 2 ** 32 - 1 }), { nil: undefined }),
}, { requiredKeys: ['userProperties'] }), { maxLength: 3 });
const publication = fc.tuple(topic, payload, fc.boolean(), fc.nat(), fc.constantFrom<0 | 1 | 2>(0, 1, 2), fc.integer({ min: 1, max: 65535 }));

const bytesOf = (p: Uint8Array | string) => Buffer.from(p as Uint8Array).toString('hex');

testProp(`${FC} › MQTT frames › PUBLISH packets framed by the notifiers read back through the client library's parser`, [
  fc.array(publication, { minLength: 1, maxLength: 12 }), fc.constantFrom<4 | 5>(4, 5), fc.integer({ min: 1, max: 256 }), propertySets, fc.boolean(),
], (t, pubs, protocol, initial, sets, bytesTopic) => {
  const frames = new PublishFrames(protocol, initial);
  // over 5, publication i carries property set i mod (sets + 1), the last being none
  const propsOf = (i: number) => (protocol === 5 ? sets[i % (sets.length + 1)] : undefined);
  pubs.forEach(([tp, p, retain, i, qos, id]) => frames.add(tp, bytesTopic ? Buffer.from(tp, 'utf8') : undefined, p, retain, propsOf(i), qos, id));
  t.is(frames.count, pubs.length);
  const { bytes, messages } = frames.take();
  const parser = packetParser({ protocolVersion: protocol });
  const got: Record<string, unknown>[] = [];
  const errors: string[] = [];
  parser.on('packet', (packet) => {
    const p = packet as IPublishPacket;
    got.push({ topic: p.topic, payload: bytesOf(p.payload), qos: p.qos, messageId: p.qos ? p.messageId : 0, retain: p.retain, properties: p.properties ?? {} });
  });
  parser.on('error', (err: Error) => errors.push(err.message));
  parser.parse(bytes);
  same(t, errors, []);
  const want = pubs.map(([tp, p, retain, i, qos, id]) => ({ topic: tp, payload: bytesOf(p), qos, messageId: qos ? id : 0, retain, properties: propsOf(i) ?? {} }));
  same(t, got, want.map((w) => ({ ...w, properties: JSON.parse(JSON.stringify(w.properties)) as Record<string, unknown> })));
  // the messages for a client that must publish them itself: QoS 0 frames only
  const zero = want.filter((w) => w.qos === 0).length === want.length;
  if (zero) same(t, messages().map((m) => ({ topic: m.topic, payload: bytesOf(m.payload), qos: m.qos, messageId: 0, retain: m.retain, properties: m.properties ?? {} })), want);
}, { numRuns: 4_000 });
