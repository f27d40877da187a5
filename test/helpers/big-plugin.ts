/**
 * A drop-in plugin (plugins/big.js of a test controller): `big` answers a
 * string of `n` characters (no key needed) and counts its calls, `calls`
 * tells the count. `numbered`: each answer ends with its call's number, so a
 * client can tell the answers apart (and each is longer than n).
 */
export function bigPlugin(numbered = false): string {
  return `
module.exports.plugin = { name: 'big', kind: 'sysapi', version: '1.0.0',
  start(ctx) {
    let calls = 0;
    ctx.register({ name: 'big', permission: 'none', description: 'n characters',
      params: { n: { type: 'integer', required: true, description: 'length' } },
      handler: (p) => { calls++; return 'x'.repeat(p.n)${numbered ? ' + calls' : ''}; } });
    ctx.register({ name: 'calls', permission: 'none', description: 'calls of big', params: {}, handler: () => ({ calls }) });
  } };`;
}
