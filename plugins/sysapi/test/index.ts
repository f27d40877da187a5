import { definePlugin } from '../../../core/plugin';
import { Build, Product_names, Version } from '../../../core/defaults';
import { KeptAnswer } from '../../../core/results';
import { Levels } from '../../../core/log';
import type { ApiKey } from '../../../core/auth/apikey';
import type { CallContext } from '../../../core/functions';
import { ThreadCount } from './threads';

/** `test`: system info and the acl of the calling key (spec "System info"). */
export const plugin = definePlugin({
  name: 'sysapi-test',
  kind: 'sysapi',
  version: '1.0.0',
  start(ctx) {
    const started = Date.now();
    const { config, paths, logger } = ctx;
    const threads = new ThreadCount();
    const made = new WeakMap<ApiKey, { revision: number; debug: boolean; threads: number; part: KeptAnswer }>();
    /** The answer's members for this caller but time and uptime; `threads`: the thread count (sysfunc and master keys). */
    const fixedInfo = (call: CallContext, threads: number): Record<string, unknown> => {
      const key = call.key!;
      // the caller as 3.3 describes it (aci): the key id, and for a token its user and mode
      const aci: Record<string, unknown> = call.token
        ? { auth: 'token', key_id: key.id, token_mode: call.readonly ? 'readonly' : 'normal', u: call.user ?? null, utp: null }
        : { key_id: key.id };
      const info: Record<string, unknown> = {
        aci,
        // 3.3 lists cdata for every key, the master key too
        acl: Object.assign(key.acl(), { cdata: [...key.lists.cdata] }),
        controller: `${paths.product}/${config.server.name}`,
        // the default log level (3.3: the logging level id; set_debug does not change it)
        log_level: Levels.info,
        layout: config.server.layout,
        product_build: Build,
        product_code: paths.product,
        product_name: Product_names[paths.product],
        system: config.server.name,
        version: Version,
      };
      // a read-only token is told what any key is told (3.3: its master and sysfunc checks answered "restricted")
      if ((key.master || key.sysfunc) && !call.readonly) {
        info.db_update = config.dbUpdateCode;
        info.debug = logger.debugMode;
        info.polldelay = config.server.polldelay;
        // 3.3's setup mode is a timed state its `setup_mode` function turns on ([sysapi] setup_mode only allows
        // it), off at start; that function is absent here (plugins/sysapi/README.md), so the mode is never on
        info.setup_mode = false;
        info.threads = threads;
      }
      if (key.master && !call.readonly) info.file_management = config.sysapi.file_management;
      return info;
    };
    ctx.register({
      name: 'test',
      permission: 'any',
      params: {},
      description: 'Test the API and the key: system info with the acl of the calling key.',
      returns: 'system info object',
      handler(_p, call) {
        const key = call.key!;
        const now = Date.now();
        // the thread count, for the keys 3.3 told it (sysfunc, master); it changes seldom, so it is one of the
        // fixed members, encoded once
        const n = (key.master || key.sysfunc) && !call.readonly ? threads.count(now) : 0;
        // all but time and uptime stays the same between a key's calls (monitors call `test` every few seconds):
        // made and encoded once per key (KeptAnswer), made again when the key, the debug mode or the thread count
        // changes; a token's is made per call
        let fixed = call.token ? undefined : made.get(key);
        if (!fixed || fixed.revision !== key.revision || fixed.debug !== logger.debugMode || fixed.threads !== n) {
          fixed = { revision: key.revision, debug: logger.debugMode, threads: n, part: new KeptAnswer(fixedInfo(call, n)) };
          if (!call.token) made.set(key, fixed);
        }
        call.withStatus = true;
        return fixed.part.for(call, { time: now / 1000, uptime: Math.floor((now - started) / 1000) });
      },
    });
  },
});
