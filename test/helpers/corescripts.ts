import fs from 'node:fs';
import path from 'node:path';
import { Keys, type Client } from './controller';
import { controllerLog } from './notifiers';
import { until } from './wait';

export { controllerLog };

/** Where a test controller's core scripts live (product uc). */
export const CS = 'xc/uc/cs';

export function writeScript(dir: string, name: string, source: string): void {
  fs.mkdirSync(path.join(dir, CS), { recursive: true });
  fs.writeFileSync(path.join(dir, CS, name), source);
}

/** Call a method with the master key; the whole JSON RPC response. */
export function call(client: Client, method: string, params: Record<string, unknown> = {}) {
  return client.rpc(method, { k: Keys.master, ...params });
}

/** Wait until the controller log matches `re`. */
export function untilLogged(dir: string, re: RegExp, ms?: number): Promise<true> {
  return until(`log ${re}`, async () => re.test(controllerLog(dir)) || undefined, ms) as Promise<true>;
}
