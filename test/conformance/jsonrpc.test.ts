import test from 'ava';
import { Keys, startController, type Running } from '../helpers/controller';
import { SUITE_PLUGIN } from './plugin';
import { TRANSCRIPTS } from './jsonrpc-transcripts';
import { JSONRPC_DEPARTURES } from './departures';

/**
 * JSON RPC 2.0, section 7: each example sent to /jrpc as the specification
 * writes it (the key in the X-Auth-Key header, so the bodies stay the
 * specification's); the answer is the specification's, or this controller's
 * listed departure (departures.ts: 3.3's codes and rules).
 */
let server: Promise<Running> | undefined;
const controller = () => (server ??= startController(undefined, { files: { 'plugins/conformance.js': SUITE_PLUGIN } }));
test.after.always(async () => { if (server) await (await server).stop(); });

/** An answer without `message` (free text, 5.1). */
const withoutMessage = (a: unknown): unknown => {
  if (Array.isArray(a)) return a.map(withoutMessage);
  if (!a || typeof a !== 'object' || !('error' in a)) return a;
  const { error, ...rest } = a as { error: { code: number } };
  return { ...rest, error: { code: error.code } };
};

for (const tr of TRANSCRIPTS) {
  const departure = JSONRPC_DEPARTURES.find((d) => d.case === tr.name);
  test(`JSON RPC 2.0 §7 › ${tr.name}`, async (t) => {
    const { url } = await controller();
    const r = await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Auth-Key': Keys.master }, body: tr.request });
    const text = await r.text();
    const got = text === '' ? undefined : withoutMessage(JSON.parse(text));
    const want = departure ? departure.answer : tr.answer;
    t.deepEqual(got, want, departure ? `departure: ${departure.why}` : 'as the specification');
    // no answer: the notification's 202 (specification, transport rule 5)
    if (want === undefined) t.is(r.status, 202);
  });
}
