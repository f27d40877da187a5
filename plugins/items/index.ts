import { definePlugin } from '../../core/plugin';
import { ItemsSettings, itemsLimits } from './defaults';
import { ItemRegistry } from './registry';
import { registerItemFunctions } from './functions';
import { checkMqttUpdateDefault } from './check';
import { itemsMetrics } from './metrics';

/**
 * Plugin `items`: units, sensors and lvars (service `items`, contract in
 * ./contract.ts), persisted in runtime/<product>_items.json, with the product API
 * functions create, destroy, list, state, update, action, result, set_prop.
 */
export const plugin = definePlugin({
  name: 'items',
  kind: 'service',
  version: '1.0.0',
  provides: ['items'],
  settings: { server: ItemsSettings },
  checkFiles: (paths) => checkMqttUpdateDefault(paths),
  start(ctx) {
    const limits = itemsLimits(ctx.config);
    const reg = new ItemRegistry(ctx, limits);
    reg.load();
    ctx.provide('items', reg);
    registerItemFunctions(ctx, reg);
    ctx.metrics(() => itemsMetrics(reg.fileStats()));
    ctx.onSave(() => reg.save());
    ctx.interval(() => reg.actions.purge(), Math.max(1, limits.action_cleaner_interval) * 1000);
    ctx.onStop(() => reg.stop());
  },
});
