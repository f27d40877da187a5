import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { Config } from '../../../core/config';
import type { Paths } from '../../../core/paths';
import { parseIni } from '../../../core/ini';
import { parseBool } from '../../../core/schema';
import { describe } from '../../../core/log';
import { ErrorKinds } from '../../../core/errors';
import { parseListenAddress } from '../../../core/settings/listen-address';

/**
 * `test` asks the running controller of the directory first: the endpoint
 * is tested by the notifier that runs there (test_notifier), so a test never
 * acts as a second copy of a live endpoint (a Sparkplug edge node's second
 * connection would publish NBIRTH and NDEATH for the live node).
 */

/** What the controller said, or why the command line tests on its own. */
export type Asked =
  | { by: 'controller'; url: string; /** the reason the test failed; undefined: passed */ failed?: string }
  | { by: 'cli'; why: string };

/** Extra time the call may take beyond the notifier's own timeout (the call itself, a busy controller). */
const CallMarginMs = 5000;

/** Where the controller of the directory answers on this machine, from its [webapi] listen; a string says why it cannot be found. */
export function controllerUrl(config: Config): string | { url: string; where: string } {
  const a = parseListenAddress(config.webapi.listen);
  if (typeof a === 'string') return `[webapi] listen is in error (${a})`;
  if (a.port === 0) return `the controller's port is chosen at its start (listen ${config.webapi.listen}), so it cannot be asked`;
  // every address: this machine's loopback is one of them
  const host = a.host === '0.0.0.0' ? '127.0.0.1' : a.host === '::' ? '::1' : a.host;
  const where = `${net.isIPv6(host) ? `[${host}]` : host}:${a.port}`;
  return { url: `http://${where}`, where };
}

/** The first master key of the key file (the controller's own), or a string saying why there is none. */
export function masterKey(paths: Paths): string | { key: string } {
  const file = path.relative(paths.dir, paths.apikeysFile);
  let text: string;
  try {
    text = fs.readFileSync(paths.apikeysFile, 'utf8');
  } catch (err) {
    return `${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? describe(err)}), so a running controller cannot be asked`;
  }
  for (const sec of Object.values(parseIni(text))) {
    const key = sec.key?.trim();
    if (key && parseBool(sec.master) === true) return { key };
  }
  return `${file} holds no master key, so a running controller cannot be asked`;
}

/**
 * test_notifier on the running controller over JSON RPC, within the
 * notifier's timeout and CallMarginMs. Any answer but a test result (nothing
 * listening, no answer, the key refused, a notifier the controller has not
 * loaded) is a reason for the command line to test on its own.
 */
export async function askController(paths: Paths, config: Config, id: string, timeoutSec: number): Promise<Asked> {
  const at = controllerUrl(config);
  if (typeof at === 'string') return { by: 'cli', why: at };
  const k = masterKey(paths);
  if (typeof k === 'string') return { by: 'cli', why: k };
  const keyFile = path.relative(paths.dir, paths.apikeysFile);
  let answer: { result?: unknown; error?: { code?: unknown; message?: unknown } };
  try {
    const r = await fetch(`${at.url}/jrpc`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'test_notifier', params: { k: k.key, i: id }, id: 1 }),
      signal: AbortSignal.timeout(timeoutSec * 1000 + CallMarginMs),
    });
    answer = await r.json() as typeof answer;
  } catch (err) {
    const code = ((err as { cause?: NodeJS.ErrnoException }).cause ?? (err as NodeJS.ErrnoException)).code;
    if (code === 'ECONNREFUSED') return { by: 'cli', why: `no controller answers at ${at.where}` };
    if ((err as Error).name === 'TimeoutError') return { by: 'cli', why: `no answer from ${at.url} within ${timeoutSec * 1000 + CallMarginMs} ms` };
    if (err instanceof SyntaxError) return { by: 'cli', why: `what answers at ${at.url} is not a controller` };
    return { by: 'cli', why: `${at.url} cannot be reached (${code ?? describe(err)})` };
  }
  if (!answer || typeof answer !== 'object') return { by: 'cli', why: `what answers at ${at.url} is not a controller` };
  // true on JSON RPC reads {ok: true}
  if ((answer.result as { ok?: unknown } | undefined)?.ok === true) return { by: 'controller', url: at.url };
  const code = answer.error?.code;
  const message = String(answer.error?.message ?? 'no reason given');
  switch (code) {
    case ErrorKinds.function_failed.code:
      // the host says "notifier ID test failed: why": the command line says the first part itself
      return { by: 'controller', url: at.url, failed: message.replace(`notifier ${id} test failed: `, '') };
    case ErrorKinds.not_found.code:
      return { by: 'cli', why: 'the running controller has not loaded it: restart it to apply the file' };
    case ErrorKinds.access_denied.code:
      return { by: 'cli', why: `the controller at ${at.url} refused the master key of ${keyFile}: ${message}` };
    default:
      return { by: 'cli', why: `the controller at ${at.url} did not test it: ${message}` };
  }
}
