import { definePlugin } from '../../../core/plugin';
import { text } from '../../../core/schema';
import { functionFailed, invalidParams } from '../../../core/errors';

/** Token modes as EVA ICS 3.3 numbered them in list_tokens (`m`). */
const MODE_NORMAL = 1;
const MODE_READONLY = 2;

/**
 * list_tokens, drop_tokens, set_token_readonly (EVA ICS 3.3.2 sys-api, its
 * parameters and answers). Ending a token ends its event streams too: the
 * token store tells the key store, whose listeners (the stream) check their
 * clients again.
 */
export const plugin = definePlugin({
  name: 'sysapi-tokens',
  kind: 'sysapi',
  version: '1.0.0',
  start(ctx) {
    const tokens = ctx.keys.tokens;
    /** 3.3 answered false (10) when tokens are off ([webapi] session_timeout = 0) */
    const enabled = () => {
      if (!tokens.enabled) throw functionFailed('session tokens are disabled');
    };

    ctx.register({
      name: 'list_tokens',
      changes: false,
      permission: 'master',
      params: {},
      description: 'The valid session tokens, by user.',
      returns: 'array of {u: user ("" for a key login), ki: key id, utp: user type (null), t: creation or last use (Unix seconds), m: mode (1 normal, 2 read-only), token}',
      handler() {
        enabled();
        return tokens.list()
          .map(([token, info]) => ({
            u: info.user ?? '', ki: info.keyId, utp: null, t: tokens.since(info) / 1000, m: info.readonly ? MODE_READONLY : MODE_NORMAL, token,
          }))
          .sort((a, b) => (a.u < b.u ? -1 : a.u > b.u ? 1 : 0));
      },
    });

    ctx.register({
      name: 'drop_tokens',
      returns: 'OK',
      permission: 'master',
      params: { a: text('session token'), u: text('user login: all of its tokens'), i: text('API key id: all of its tokens') },
      description: 'End session tokens: one (a), a user\'s (u) or a key\'s (i); the first given counts. Their event streams end too.',
      handler(p) {
        enabled();
        // as in 3.3, an empty value is no value
        if (p.a) {
          if (!tokens.drop(p.a)) throw functionFailed('token not found');
        } else if (p.u) {
          tokens.dropUser(p.u);
        } else if (p.i) {
          tokens.dropKey(p.i);
        } else {
          throw invalidParams('no drop parameters specified: give a, u or i');
        }
        return true;
      },
    });

    ctx.register({
      name: 'set_token_readonly',
      returns: 'OK',
      permission: 'any',
      params: {},
      description: 'Make the calling token read-only: functions that may change something then answer 15 (token restricted). '
        + 'login with the token (a) and the credentials of its key (k, or u and p) makes it normal again.',
      handler(_p, call) {
        enabled();
        if (!call.token || !tokens.setReadonly(call.token, true)) throw functionFailed('user is not logged in');
        return true;
      },
    });
  },
});
