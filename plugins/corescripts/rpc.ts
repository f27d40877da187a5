import type { FunctionDecl } from '../../core/functions';
import type { ModuleLogger } from '../../core/log';
import type { Caller, Method } from './runner';

/**
 * The cs_<topic> methods scripts declare, as functions of the controller:
 * each is a real declaration (permission, parameters, rpc.discover), so a
 * call of an undeclared cs_ name is an unknown method (6 / 405) like any
 * other. Each is withdrawn on its own, so they come and go with the
 * scripts without touching the plugin's other functions.
 */
export class RpcFunctions {
  /** how to withdraw each registered cs_ function */
  private readonly removers: (() => void)[] = [];

  constructor(
    /** declares a function of the plugin; returns the way to withdraw it */
    private readonly register: (decl: FunctionDecl) => () => void,
    private readonly log: ModuleLogger,
    private readonly call: (topic: string, params: Record<string, unknown>, caller: Caller) => Promise<unknown>,
  ) {}

  /** Make the registered cs_ functions exactly `methods`. */
  sync(methods: Map<string, Method>): void {
    this.clear();
    for (const [topic, { script, decl }] of methods) {
      const name = `cs_${topic}`;
      try {
        this.removers.push(this.register({
          name,
          permission: decl.permission,
          params: decl.params,
          description: decl.description,
          returns: 'what the script returns; OK when it returns nothing',
          handler: (p, call) => this.call(topic, p, {
            key_id: call.key?.id ?? null, master: !!call.key?.master, user: call.user ?? null, ip: call.ip,
          }),
        }));
      } catch (err) {
        this.log.error(`${script.file}:${decl.line ?? '?'}: ${name} not declared: ${(err as Error).message}`);
      }
    }
  }

  clear(): void {
    for (const remove of this.removers.splice(0)) remove();
  }
}
