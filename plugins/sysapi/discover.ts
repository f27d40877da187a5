import { definePlugin } from '../../core/plugin';
import { Product_names } from '../../core/defaults';

/** `rpc.discover`: the OpenRPC description of every declared function. */
export const plugin = definePlugin({
  name: 'sysapi-discover',
  kind: 'sysapi',
  version: '1.0.0',
  start(ctx) {
    ctx.register({
      name: 'rpc.discover',
      permission: 'none',
      params: {},
      description: 'OpenRPC description of the API of this controller.',
      returns: 'OpenRPC document',
      handler: () => ctx.describeFunctions(`${Product_names[ctx.paths.product]} API`),
    });
  },
});
