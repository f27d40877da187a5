/**
 * One server for every test of a file (PostgreSQL, InfluxDB): started at
 * the first `get`, stopped by `stop` (a test.after.always hook), and a new
 * database name per test (`prefix` + a number).
 */
export function sharedServer<S>(start: (owner: { teardown(fn: () => unknown): void }) => Promise<S>, prefix: string) {
  const downs: (() => unknown)[] = [];
  let server: Promise<S> | undefined;
  let n = 0;
  return {
    get: () => (server ??= start({ teardown: (fn) => downs.push(fn) })),
    nextName: () => `${prefix}${++n}`,
    async stop() { for (const fn of downs.reverse()) await fn(); },
  };
}
