import { definePlugin } from '../../core/plugin';
import { ItemsSettings, itemsLimits } from './defaults';
import { ItemRegistry } from './registry';
import { registerItemFunctions } from './functions';
import { checkMqttUpdateDefault } from './check';
import { itemsMetrics } from './metrics';
import { checkStateDb, checkStateDbConnection, openStateDb, StateDbSettings } from './state-db-setup';

/**
 * Plugin `items`: units, sensors and lvars (service `items`, contract in
 * ./contract.ts), persisted in runtime/<product>_items.json (and, with a
 * PostgreSQL `[server] db`, in its table `state` too), with the product API
 * functions create, destroy, list, state, update, action, result, set_prop.
 */
export const plugin = definePlugin({
  name: 'items',
  kind: 'service',
  version: '1.0.0',
  provides: ['items'],
  settings: { server: { ...ItemsSettings, ...StateDbSettings } },
  checkFiles: (paths) => [...checkMqttUpdateDefault(paths), ...checkStateDb(paths)],
  checkConnections: (paths) => checkStateDbConnection(paths),
  async start(ctx) {
    const limits = itemsLimits(ctx.config);
    const reg = new ItemRegistry(ctx, limits);
    reg.load();
    // before the items' own stop is registered: stops run newest first, and the items' last writes need the link
    await openStateDb(ctx, reg, limits.items_write_max);
    ctx.provide('items', reg);
    registerItemFunctions(ctx, reg);
    ctx.metrics(() => itemsMetrics(reg.fileStats()));
    ctx.onSave(() => reg.save());
    ctx.interval(() => reg.actions.purge(), Math.max(1, limits.action_cleaner_interval) * 1000);
    ctx.onStop(() => reg.stop());
  },
});
