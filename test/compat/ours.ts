/**
 * This controller in the state calls.ts's SETUP describes: the folder a fresh
 * 3.3.2 controller had when the fixtures were recorded (same keys, same
 * command script, same notifier file, same settings that show in answers).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import { startController, type Running } from '../helpers/controller';
import { SETUP } from './calls';

/** `notifiers`: notifier files by id instead of SETUP's compat_db. */
export async function startLike332(t: ExecutionContext | undefined, notifiers?: Record<string, unknown>): Promise<Running> {
  const nfiles = notifiers
    ? Object.fromEntries(Object.entries(notifiers).map(([id, cfg]) => [`runtime/uc_notify.d/${id}.json`, JSON.stringify(cfg, null, 4)]))
    : { 'runtime/uc_notify.d/compat_db.json': JSON.stringify(SETUP.notifier, null, 4) };
  const r = await startController(t, {
    keysIni: SETUP.keysIni,
    ini: {
      server: { name: 'eva33-uc', polldelay: 0.01, keep_logmem: 86400, layout: 'enterprise', db_update: 'instant' },
      // 3.3 has no wait after failed key checks; the suite sends many on purpose
      webapi: { login_delay: 0 },
      sysapi: { file_management: true, setup_mode: true },
    },
    files: {
      'xc/cmd/compat_cmd': SETUP.cmdScript,
      ...nfiles,
    },
  });
  fs.chmodSync(path.join(r.dir, 'xc', 'cmd', 'compat_cmd'), 0o755);
  return r;
}
