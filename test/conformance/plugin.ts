/**
 * A drop-in plugin (JavaScript text, written into a test controller's
 * plugins/ folder) with the functions the suites call: the JSON RPC 2.0
 * specification's examples (subtract, sum, notify_hello, notify_sum,
 * get_data, parameters by name as every function here takes them; `update`
 * is the controller's own) and
 * `echo_value`, which answers the value it was given (MessagePack round trips).
 */
export const SUITE_PLUGIN = `
module.exports.plugin = {
  name: 'conformance', kind: 'sysapi', version: '1.0.0',
  start(ctx) {
    const int = (description) => ({ type: 'integer', required: true, description });
    ctx.register({ name: 'subtract', permission: 'any', description: 'minuend - subtrahend',
      params: { minuend: int('minuend'), subtrahend: int('subtrahend') }, handler: (p) => p.minuend - p.subtrahend });
    for (const name of ['sum', 'notify_hello', 'notify_sum']) {
      ctx.register({ name, permission: 'any', description: name, params: {}, handler: () => 0 });
    }
    ctx.register({ name: 'get_data', permission: 'any', description: 'the example data', params: {}, handler: () => ['hello', 5] });
    ctx.register({ name: 'echo_value', permission: 'any', description: 'answers v as it came',
      params: { v: { type: 'any', required: false, description: 'any value' } }, handler: (p) => ({ v: p.v === undefined ? null : p.v }) });
  },
};
`;
