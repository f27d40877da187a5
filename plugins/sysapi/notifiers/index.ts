import { definePlugin } from '../../../core/plugin';
import { int, list, num, text } from '../../../core/schema';
import { invalidParams, notFound } from '../../../core/errors';

/** Notifier management (spec "Notifier management"): all master only; enable/disable last until restart. */
export const plugin = definePlugin({
  name: 'sysapi-notifiers',
  kind: 'sysapi',
  version: '1.0.0',
  needs: ['notifiers'],
  start(ctx) {
    const host = ctx.service('notifiers');
    const id = { i: text('notifier id').req() };
    const known = (i: string) => {
      if (!host.get(i)) throw notFound(`notifier ${i}`);
      return i;
    };
    ctx.register({
      name: 'list_notifiers',
      changes: false,
      permission: 'master',
      params: {},
      description: 'List the notifiers of the controller.',
      returns: 'array of notifier objects',
      handler: () => host.list().map((i) => host.describe(i)),
    });
    ctx.register({
      name: 'get_notifier',
      changes: false,
      permission: 'master',
      params: id,
      description: 'One notifier, with its live delivery figures (stats: queued, sent, failed, dropped, test).',
      returns: 'notifier object',
      handler: (p) => host.describe(known(p.i), true),
    });
    // beyond the spec (core/README.md, Settings): notifier files described as rpc.discover's x-settings describes the ini
    ctx.register({
      name: 'list_notifier_types',
      changes: false,
      permission: 'master',
      params: {},
      description: 'The settings of notifier files, from the declarations the files are checked by: the file\'s fields, those every type shares (type, default, range, description) and each loaded type\'s own.',
      returns: '{fields, common, types: {<type>: {description, aliases, settings}}}',
      handler: () => host.settings(),
    });
    // beyond the spec (plugins/notifiers/README.md, Decisions): the console's and a script's Test
    ctx.register({
      name: 'test_notifier',
      returns: 'OK',
      permission: 'master',
      params: id,
      description: 'Test a notifier\'s endpoint now, within its timeout (a disabled notifier too); error 10 with the reason when the receiver did not answer.',
      handler: async (p: { i: string }) => {
        if (!(await host.test(p.i))) throw notFound(`notifier ${p.i}`);
        return true;
      },
    });
    // EVA ICS 3.3 (its SFA API): tell the clients a restart is coming without one
    ctx.register({
      name: 'notify_restart',
      returns: 'OK',
      permission: 'master',
      params: {},
      description: 'Send the server restart event (subject server, data restart) to every notifier subscribed to server, without a restart.',
      handler: () => {
        host.notifyServer('restart');
        return true;
      },
    });
    // beyond the spec and 3.3 (plugins/notifiers/README.md, Durable web hooks): what a durable notifier gave up
    const letters = (i: string) => {
      const l = host.deadLetters(i);
      if (!l) throw notFound(`notifier ${i}`);
      return l;
    };
    const which = {
      ids: list('frame ids (webhook-id) of the letters'),
      s: num('from this time on (Unix seconds; inclusive)'),
      e: num('up to this time (Unix seconds; inclusive)'),
    };
    type Which = { ids?: string[]; s?: number; e?: number };
    /** The letters a call means: ids and/or a time range; none of them is refused (a call that means all says s=0). */
    const filterOf = (p: Which) => {
      if (p.ids === undefined && p.s === undefined && p.e === undefined) throw invalidParams('give ids, or a time range with s and/or e (s=0: all)');
      return { ids: p.ids, from: p.s, to: p.e };
    };
    ctx.register({
      name: 'list_dead_letters',
      changes: false,
      permission: 'master',
      params: { ...id, s: which.s, e: which.e, offset: int('skip this many letters'), n: int('at most this many letters (default 100, at most 1000)') },
      description: 'The dead letters of a durable notifier, oldest first: frames its receiver refused for good, that expired (outbox_max_age) or that used up their retries on a failure that is no outage (id, time t in ms, subject, events, size, last HTTP status, error).',
      returns: 'array of {id, t, subject, events, size, status, error}',
      handler: (p) =>
        letters(p.i).list({ from: p.s, to: p.e }, Math.max(0, p.offset ?? 0), Math.min(1000, Math.max(0, p.n ?? 100))),
    });
    ctx.register({
      name: 'replay_dead_letters',
      permission: 'master',
      params: { ...id, ...which },
      description: 'Send dead letters again: by ids or time range, back into the notifier\'s outbox, oldest first, each as the frame it was under its id (webhook-id).',
      returns: '{letters, events}',
      handler: (p) => letters(p.i).replay(filterOf(p)),
    });
    ctx.register({
      name: 'drop_dead_letters',
      permission: 'master',
      params: { ...id, ...which },
      description: 'Delete dead letters by ids or time range.',
      returns: '{letters}',
      handler: async (p) => ({ letters: await letters(p.i).drop(filterOf(p)) }),
    });
    for (const [name, enabled] of [['enable_notifier', true], ['disable_notifier', false]] as const) {
      ctx.register({
        name,
        returns: 'OK',
        permission: 'master',
        params: id,
        description: `${enabled ? 'Enable' : 'Disable'} a notifier until the controller restarts.`,
        handler: async (p: { i: string }) => {
          if (!(await host.setEnabled(p.i, enabled))) throw notFound(`notifier ${p.i}`);
          return true;
        },
      });
    }
  },
});
