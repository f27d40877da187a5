import fs from 'node:fs';
import path from 'node:path';
import { Keys, type Client } from '../helpers/controller';

/** Where a test controller's core scripts live (product uc). */
export const CS = 'xc/uc/cs';

export function writeScript(dir: string, name: string, source: string): void {
  fs.mkdirSync(path.join(dir, CS), { recursive: true });
  fs.writeFileSync(path.join(dir, CS, name), source);
}

/** Poll `probe` until it returns something other than undefined; fails after `ms`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Call a method with the master key; the whole JSON RPC response. */
export function call(client: Client, method: string, params: Record<string, unknown> = {}) {
  return client.rpc(method, { k: Keys.master, ...params });
}

/** The controller log of a test controller (etc sets log_file to it). */
export function controllerLog(dir: string): string {
  try { return fs.readFileSync(path.join(dir, 'controller.log'), 'utf8'); } catch { return ''; }
}

/** Wait until the controller log matches `re`. */
export function untilLogged(dir: string, re: RegExp, ms?: number): Promise<true> {
  return until(`log ${re}`, async () => (re.test(controllerLog(dir)) ? true : undefined), ms);
}
