import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import autocannon from 'autocannon';

/** Shared pieces of the benchmarks: child servers, load runs, the table. */

export interface Load { rps: number; p99: number; errors: number }

/** Keep-alive load with autocannon for `seconds`; requests/s and p99 latency (ms). */
export async function load(opts: { url: string; method?: 'GET' | 'POST'; body?: Buffer | string; headers?: Record<string, string>; seconds?: number; connections?: number }): Promise<Load> {
  const r = await autocannon({
    url: opts.url, method: opts.method ?? 'GET', body: opts.body as any, headers: opts.headers,
    duration: opts.seconds ?? 5, connections: opts.connections ?? 32, pipelining: 1,
  });
  return { rps: r.requests.average, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

/** The run with the median requests/s. */
export function median(runs: Load[]): Load {
  return [...runs].sort((x, y) => x.rps - y.rps)[Math.floor(runs.length / 2)];
}

/** Start a node script as a child; resolves with the port it prints as `PORT <n>` or `listening on ...:<n>`. */
export function startChild(script: string, args: string[] = [], env: Record<string, string> = {}): Promise<{ proc: ChildProcess; port: number }> {
  const proc = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /PORT (\d+)/.exec(out) ?? /listening on http:\/\/[^\s]+:(\d+)/.exec(out);
      if (m) resolve({ proc, port: Number(m[1]) });
    });
    proc.once('exit', (code) => reject(new Error(`${path.basename(script)} exited ${code}: ${out}`)));
  });
}

export function stopChild(proc: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null) return resolve();
    proc.once('exit', () => resolve());
    proc.kill('SIGTERM');
  });
}

/** Print a markdown table. */
export function table(head: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

export const fmt = (n: number, digits = 0) => n.toFixed(digits);

/**
 * A drop-in plugin for a bench controller: `bench_update` calls the items
 * service's update n times on `oid`, yielding every 1000 so delivery runs.
 */
export function benchUpdatePlugin(oid: string): string {
  return `
module.exports.plugin = {
  name: 'bench-update', kind: 'sysapi', version: '1.0.0', needs: ['items'],
  start(ctx) {
    ctx.register({ name: 'bench_update', permission: 'master', description: 'n updates of ${oid}',
      params: { n: { type: 'integer', required: true, description: 'updates' } },
      async handler(p) {
        const items = ctx.service('items');
        for (let i = 1; i <= p.n; i++) {
          items.update('${oid}', { status: 1, value: String(i) });
          if (i % 1000 === 0) await new Promise((r) => setImmediate(r));
        }
        return true;
      } });
  },
};
`;
}
