import 'reflect-metadata';
import test from 'ava';
import { EchoFilter } from '../../plugins/notifiers/mqtt/echo';
import { LatestRetained } from '../../plugins/notifiers/mqtt/retained';
import { MQTT_TOPIC_MAX_BYTES, topicMatches, validFilter, validTopic } from '../../plugins/notifiers/mqtt/topics';
import { parseTopic } from '../../plugins/corescripts/topic';
import { parseControl } from '../../plugins/notifiers/mqtt/inbound-messages';
import { parseBinding } from '../../plugins/items/binding';

test('echo filter: own publications come back in order and are recognised; foreign ones pass', (t) => {
  const e = new EchoFilter(10);
  for (const v of ['1', '2', '3']) e.sent('a', v);
  t.true(e.isEcho('a', '1'));
  t.false(e.isEcho('a', '7'), 'a foreign value');
  t.false(e.isEcho('b', '2'), 'another topic');
  // an echo lost on the way (QoS 0 over a dropped connection) is skipped by the next one
  t.true(e.isEcho('a', '3'));
  t.is(e.size('a'), 0);
  t.false(e.isEcho('a', '2'), 'forgotten once a later echo came');
});

test('echo filter at its bound: the oldest are forgotten, and as many unmatched messages are taken for echoes', (t) => {
  const e = new EchoFilter(3);
  for (let i = 1; i <= 5; i++) e.sent('a', String(i));
  t.is(e.size('a'), 3);
  // echoes of 1 and 2 were forgotten: they still must not set the item back
  t.true(e.isEcho('a', '1'));
  t.true(e.isEcho('a', '2'));
  t.true(e.isEcho('a', '3'));
  t.true(e.isEcho('a', '5'));
  t.false(e.isEcho('a', '9'), 'all accounted for: a foreign message again');
});

test('topic length is counted in UTF-8 bytes, the same by the mqtt notifier and core scripts', (t) => {
  t.is(MQTT_TOPIC_MAX_BYTES, 65535);
  // 'é' is 2 bytes, '€' 3: exactly at the limit, and one byte over it with fewer characters than the limit
  const atLimit = [`${'é'.repeat(32767)}a`, `x/${'€'.repeat(21844)}y`];
  const over = [`${'é'.repeat(32768)}`, `x/${'€'.repeat(21844)}yz`, `${'😀'.repeat(16384)}`];
  for (const topic of atLimit) {
    t.is(Buffer.byteLength(topic), 65535);
    t.true(validTopic(topic) && validFilter(topic));
    t.is(parseTopic(topic).topic, topic);
  }
  for (const topic of over) {
    t.true(Buffer.byteLength(topic) > 65535 && topic.length < 65535);
    t.false(validTopic(topic), 'mqtt notifier: publish');
    t.false(validFilter(topic), 'mqtt notifier: subscribe');
    t.throws(() => parseTopic(topic), { message: /longer than 65535 bytes/ }, 'core scripts');
  }
  t.false(validTopic('a/+/b'), 'a topic to publish to has no wildcards');
  t.true(validFilter('a/+/b'));
});

test('topic filters and bindings', (t) => {
  t.true(topicMatches('a/+/c', 'a/b/c'));
  t.true(topicMatches('a/#', 'a'));
  t.true(topicMatches('a/#', 'a/b/c'));
  t.false(topicMatches('a/+', 'a/b/c'));
  t.false(topicMatches('#', '$SYS/x'));
  t.false(validFilter('a/#/b'));
  t.false(validFilter('a/b+'));
  t.true(validFilter('+/x/#'));
  t.deepEqual(parseBinding('m1'), { id: 'm1' });
  t.deepEqual(parseBinding('m1:2'), { id: 'm1', qos: 2 });
  t.deepEqual(parseBinding('m1;0'), { id: 'm1', qos: 0 });
  t.is(parseBinding('m1:3'), undefined);
  t.is(parseBinding(''), undefined);
  t.deepEqual(parseControl(' 1  none 10 '), { status: 1, priority: 10 });
  t.deepEqual(parseControl('-1 x'), { status: -1, value: 'x' });
});

test('latest retained values while the broker is away: one per topic, newest last, bounded', (t) => {
  const r = new LatestRetained(2);
  const m = (topic: string, payload: string, retain = true) => ({ topic, payload, qos: 0 as const, retain });
  r.keep(m('a', '1'));
  r.keep(m('b', '1'));
  r.keep(m('a', '2'));
  r.keep(m('log', 'x', false)); // not retained: nothing to catch up
  r.keep(m('c', '1')); // a third topic: past the bound
  t.is(r.overflow, 1);
  r.restore(m('a', '0')); // an older value put back must not replace the newer one
  t.deepEqual(r.take().map((x) => `${x.topic}=${x.payload}`), ['b=1', 'a=2']);
  t.is(r.size, 0);
});
