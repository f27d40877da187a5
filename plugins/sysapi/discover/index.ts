import { definePlugin } from '../../../core/plugin';
import { Product_names } from '../../../core/defaults';
import { KeptAnswer } from '../../../core/results';
import { ErrorKinds } from '../../../core/errors';

/** The error catalogue (core/errors.ts): the codes an answer may carry, with the HTTP status of the direct API. */
const errors = Object.entries(ErrorKinds).map(([kind, e]) => ({ kind, code: e.code, status: e.status }));

/**
 * `rpc.discover`: the OpenRPC description of every declared function, the
 * error codes (`x-errors`), and
 * (`x-settings`) every declared setting of etc/<product>.ini by section, from
 * the same declarations that parse and check them. It needs no key and is
 * about 70 KB: made once (again only when a function comes or goes) and
 * encoded once per transport, so a batch of them costs no more than its
 * bytes (bounded by max_answer_size).
 */
export const plugin = definePlugin({
  name: 'sysapi-discover',
  kind: 'sysapi',
  version: '1.0.0',
  start(ctx) {
    const title = `${Product_names[ctx.paths.product]} API`;
    let made: { functions: object; schema: object; answer: KeptAnswer } | undefined;
    ctx.register({
      name: 'rpc.discover',
      permission: 'none',
      params: {},
      description: 'OpenRPC description of the API of this controller, with its settings (x-settings).',
      returns: 'OpenRPC document',
      handler: (_p, call) => {
        // the registry's document is the same object until a function comes or goes
        const functions = ctx.describeFunctions(title);
        const { schema } = ctx.config;
        if (made?.functions !== functions || made.schema !== schema) {
          made = { functions, schema, answer: new KeptAnswer({ ...functions, 'x-settings': schema.describe(), 'x-errors': errors }) };
        }
        return made.answer.for(call);
      },
    });
  },
});
