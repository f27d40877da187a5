import test from 'ava';
import * as mqttPacket from 'mqtt-packet';
import { PublishFrames } from '../../plugins/notifiers/mqtt/publish-frames';

// a QoS 1/2 batch is checked whole before any message takes a message id in the client's state
test('publish frames: check refuses what add refuses (a topic over 65535 bytes), writes nothing, and passes what add takes', (t) => {
  for (const protocol of [4, 5] as const) {
    const frames = new PublishFrames(protocol, 16);
    const long = 'a'.repeat(65536);
    t.throws(() => frames.check(long, 'x', undefined, 1), { message: /longer than 65535 bytes/ });
    t.throws(() => frames.add(long, undefined, 'x', false, undefined, 1, 1), { message: /longer than 65535 bytes/ });
    frames.check('a'.repeat(65535), 'x', undefined, 1);
    t.is(frames.count, 0, 'a check writes no frame');
    frames.add('t/1', undefined, 'v', true, undefined, 1, 7);
    t.is(frames.count, 1);
    const { bytes } = frames.take();
    // fixed header (PUBLISH, QoS 1, retain), remaining length, topic, message id 7, payload
    t.deepEqual([...bytes], [0x33, 2 + 3 + 2 + 1, 0, 3, ...Buffer.from('t/1'), 0, 7, ...(protocol === 5 ? [0] : []), ...Buffer.from('v')].map((b, i) => (protocol === 5 && i === 1 ? b + 1 : b)));
  }
});

test('publish frames: text topics and payloads, short and long, ASCII or not, come out as mqtt-packet writes them', (t) => {
  const texts = ['', '1', '21.5', '{"t":1.5,"c":"uc/a","status":1,"value":"x"}', 'température', '😀 ok', 'a'.repeat(128), 'a'.repeat(129), 'é'.repeat(70), `${'a'.repeat(127)}é`];
  for (const protocolVersion of [4, 5] as const) {
    for (const qos of [0, 1] as const) {
      const frames = new PublishFrames(protocolVersion, 16);
      const want: Buffer[] = [];
      texts.forEach((text, i) => {
        const topic = `eva/${text || 'x'}/status`;
        frames.check(topic, text, undefined, qos);
        frames.add(topic, undefined, text, i % 2 === 0, undefined, qos, i + 1);
        want.push(mqttPacket.generate({ cmd: 'publish', topic, payload: Buffer.from(text), qos, messageId: i + 1, retain: i % 2 === 0, dup: false, ...(protocolVersion === 5 ? { properties: {} } : {}) }, { protocolVersion }));
      });
      t.deepEqual(frames.take().bytes, Buffer.concat(want), `protocol ${protocolVersion}, QoS ${qos}`);
    }
  }
});
