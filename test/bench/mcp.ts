import fs from 'node:fs';
import type http from 'node:http';
import { startController, Keys } from '../helpers/controller';
import { HttpServer } from '../../core/http/server';
import { table, fmt, realKeys } from './lib';
import { connect, requestOf, type Case } from './inproc';

/**
 * A function called as an MCP tool (POST /mcp, tools/call) beside the same
 * function through JSON RPC (POST /jrpc): CPU µs per call, in process (the
 * request bytes through the controller's own node:http parser, the answer
 * to a connection that only counts it: inproc.ts), so the difference is
 * what the MCP path adds — Koa's routing (MCP is a plugin's route), the
 * bearer's check before the body, the MCP message around the call, the
 * answer as a tool result. BENCH_MCP_N calls per pass (20,000); five
 * rounds, each a pass of /jrpc then one of /mcp, alternating so that a
 * change of load on the machine falls on both; the medians.
 */
const N = Number(process.env.BENCH_MCP_N ?? 20_000);
const ROUNDS = 5;

/** CPU µs per request of one pass of N. */
async function pass(send: () => Promise<void>): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < N; i++) await send();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / N;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const started = await startController(undefined, { keysIni: realKeys(), ini: { server: { keep_logmem: 86400 } } });
  try {
    const server = (started.ctl.get(HttpServer) as unknown as { servers: http.Server[] }).servers[0];
    await started.client.ok('set_cvar', { k: Keys.master, i: 'x', v: '1' });
    const rows: (string | number)[][] = [];
    for (const [fn, args] of [['test', {}], ['get_cvar', { i: 'x' }]] as const) {
      const jrpc: Case = {
        name: 'jrpc', method: 'POST', url: '/jrpc', headers: { 'Content-Type': 'application/json' },
        body: Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: fn, params: { k: Keys.master, ...args }, id: 1 })),
      };
      const mcp: Case = {
        name: 'mcp', method: 'POST', url: '/mcp',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${Keys.master}`, 'MCP-Protocol-Version': '2025-11-25' },
        body: Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: fn, arguments: args } })),
      };
      const sends = [jrpc, mcp].map((c) => {
        const conn = connect(server);
        const request = requestOf(c);
        return { conn, send: () => conn.send(request) };
      });
      // both answered as expected, and warm
      for (const s of sends) {
        for (let i = 0; i < 10_000; i++) await s.send();
        const answer = s.conn.answer().toString('latin1');
        if (!answer.startsWith('HTTP/1.1 200') || /"error"|"isError"/.test(answer)) throw new Error(`unexpected answer: ${answer}`);
      }
      const costs: number[][] = [[], []];
      for (let r = 0; r < ROUNDS; r++) for (const i of [0, 1]) costs[i].push(await pass(sends[i].send));
      const [j, m] = costs.map(median);
      rows.push([`\`${fn}\``, fmt(j, 1), fmt(m, 1), `+${fmt(m - j, 1)}`, `×${fmt(m / j, 2)}`, costs[1].map((x) => fmt(x, 1)).join(' ')]);
    }
    // the MCP path without a function: Koa's routing, the bearer's check, the message, the answer
    const ping = connect(server);
    const pingRequest = requestOf({
      name: 'ping', method: 'POST', url: '/mcp', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${Keys.master}` },
      body: Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}'),
    });
    for (let i = 0; i < 10_000; i++) await ping.send(pingRequest);
    const pings: number[] = [];
    for (let r = 0; r < ROUNDS; r++) pings.push(await pass(() => ping.send(pingRequest)));
    rows.push(['MCP `ping` (no function)', '', fmt(median(pings), 1), '', '', pings.map((x) => fmt(x, 1)).join(' ')]);
    // Koa's own share: a request Koa's router answers at once (GET /metrics without a key: 403)
    const koa = connect(server);
    const koaRequest = requestOf({ name: 'koa', method: 'GET', url: '/metrics', headers: {} });
    for (let i = 0; i < 10_000; i++) await koa.send(koaRequest);
    const koas: number[] = [];
    for (let r = 0; r < ROUNDS; r++) koas.push(await pass(() => koa.send(koaRequest)));
    rows.push(['Koa alone (`GET /metrics` refused, 403)', '', fmt(median(koas), 1), '', '', koas.map((x) => fmt(x, 1)).join(' ')]);
    console.log(`\nA function as an MCP tool beside it on JSON RPC (in process, master key): CPU µs per call, medians of ${ROUNDS} alternating rounds of ${N}\n`);
    console.log(table(['function', '/jrpc', '/mcp tools/call', 'MCP adds', 'ratio', '/mcp rounds'], rows));
  } finally {
    await started.stop();
    fs.rmSync(started.dir, { recursive: true, force: true });
  }
}

void main().then(() => process.exit(0), (err: unknown) => {
  console.error(err);
  process.exit(1);
});
