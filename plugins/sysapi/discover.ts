import { definePlugin } from '../../core/plugin';
import { Product_names } from '../../core/defaults';

/**
 * `rpc.discover`: the OpenRPC description of every declared function, and
 * (`x-settings`) every declared setting of etc/<product>.ini by section, from
 * the same declarations that parse and check them.
 */
export const plugin = definePlugin({
  name: 'sysapi-discover',
  kind: 'sysapi',
  version: '1.0.0',
  start(ctx) {
    ctx.register({
      name: 'rpc.discover',
      permission: 'none',
      params: {},
      description: 'OpenRPC description of the API of this controller, with its settings (x-settings).',
      returns: 'OpenRPC document',
      handler: () => ({ ...ctx.describeFunctions(`${Product_names[ctx.paths.product]} API`), 'x-settings': ctx.config.schema.describe() }),
    });
  },
});
