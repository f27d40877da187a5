import test, { type ExecutionContext } from 'ava';
import { parseOpenRPCDocument, validateOpenRPCDocument } from '@open-rpc/schema-utils-js';
import { Keys, startController } from '../helpers/controller';
import { notifierFiles } from '../helpers/notifiers';
import { SUITE_PLUGIN } from './plugin';

/**
 * rpc.discover against the OpenRPC meta-schema (@open-rpc/schema-utils-js,
 * which checks a document against the meta-schema of its `openrpc`
 * version, and dereferences every $ref): 0 errors, for a plain controller
 * and for one with plugin functions and notifiers.
 */
async function discover(t: ExecutionContext, files: Record<string, string>) {
  const { client } = await startController(t, { files });
  const answer = await client.rpc('rpc.discover', { k: Keys.master }) as { result?: Record<string, unknown>; error?: unknown };
  t.is(answer.error, undefined);
  return answer.result!;
}

for (const [what, files] of [
  ['a plain controller', {}],
  ['plugin functions and notifiers', { ...notifierFiles({ prom: { type: 'prometheus', events: [{ subject: 'state', types: ['#'], groups: ['#'] }] } }), 'plugins/conformance.js': SUITE_PLUGIN }],
] as const) {
  test(`OpenRPC › rpc.discover of ${what} validates against the meta-schema: 0 errors`, async (t) => {
    const doc = await discover(t, files);
    t.regex(String(doc.openrpc), /^1\.\d+\.\d+$/);
    t.true((doc.methods as unknown[]).length > 30);
    const valid = validateOpenRPCDocument(doc as never);
    t.is(valid === true ? 'valid' : String((valid as Error).message), 'valid');
    // every $ref resolves, and the dereferenced document validates again
    await t.notThrowsAsync(parseOpenRPCDocument(doc as never));
  });
}
