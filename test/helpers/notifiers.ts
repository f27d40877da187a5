import fs from 'node:fs';
import path from 'node:path';
import type { Client } from './controller';

/**
 * A drop-in plugin that puts events on the controller's bus and writes log
 * records, so the notifier host is tested with no item subsystem involved.
 */
export const EMIT_PLUGIN = `
module.exports.plugin = {
  name: 'test-emit', kind: 'sysapi', version: '1.0.0',
  start(ctx) {
    ctx.register({ name: 't_emit', permission: 'master', description: 'emit events',
      params: { s: { type: 'string', required: true, description: 'subject' },
                d: { type: 'any', required: true, description: 'list of events' } },
      handler: (p) => { for (const e of p.d) ctx.emit(p.s, e); return true; } });
    ctx.register({ name: 't_log', permission: 'master', description: 'write a log record',
      params: { m: { type: 'string', required: true, description: 'message' },
                l: { type: 'integer', required: false, description: 'level' } },
      handler: (p) => { ctx.log.log(p.l || 20, p.m); return true; } });
  },
};
`;

/** Files of a test controller: the emitter plugin and notifier files by id. */
export function notifierFiles(notifiers: Record<string, Record<string, unknown>>, product = 'uc'): Record<string, string> {
  const files: Record<string, string> = { 'plugins/test-emit.js': EMIT_PLUGIN };
  for (const [id, cfg] of Object.entries(notifiers)) {
    files[`runtime/${product}_notify.d/${id}.json`] = JSON.stringify({ id, enabled: true, ...cfg });
  }
  return files;
}

/** A state event as the item subsystem sends it. */
export function stateEvent(oid: string, status = 1, value: string | null = null): Record<string, unknown> {
  const [type, fullId] = oid.split(':');
  const parts = fullId.split('/');
  const id = parts.pop()!;
  return { oid, full_id: fullId, group: parts.join('/'), id, type, status, value, t: Date.now() / 1000 };
}

/** An action event of a unit. */
export function actionEvent(oid: string, status: string): Record<string, unknown> {
  const [, fullId] = oid.split(':');
  const parts = fullId.split('/');
  const id = parts.pop()!;
  return {
    uuid: `u-${Math.random().toString(16).slice(2)}`, item_oid: oid, item_type: 'unit', item_group: parts.join('/'),
    item_id: id, status, nstatus: 1, nvalue: null, priority: 100, exitcode: null, out: '', err: '', time: {},
  };
}

export const subscribeAll = [
  { subject: 'state', types: ['#'], groups: ['#'] },
  { subject: 'action', types: ['#'], groups: ['#'], action_status: ['#'] },
];

/** The live figures of a notifier. */
export async function stats(client: Client, k: string, id: string): Promise<Record<string, any>> {
  return (await client.ok('get_notifier', { k, i: id })).stats;
}

/** The controller log so far (test controllers log to a file in their dir). */
export function controllerLog(dir: string): string {
  const f = path.join(dir, 'controller.log');
  return fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : '';
}
