import { definePlugin } from '../../../core/plugin';
import { text } from '../../../core/schema';
import type { CallContext } from '../../../core/functions';
import type { ApiKey } from '../../../core/auth/apikey';
import { eva33Hash, hashPassword, verifyPassword, dummyVerify } from '../passwords';
import { LoginThrottle, webapiLimits } from '../../../core/auth/throttle';
import { RepeatLog } from '../../../core/repeat-log';
import { type KeyUserStore, type UserRecord } from '../userdb';
import '../../cluster/contract';
import { accessDenied, alreadyExists, ApiError, functionFailed, invalidParams, notFound } from '../../../core/errors';
import { describe } from '../../../core/log';
import { writeOrFail } from '../dynamic-keys';
import { basicCredentials } from '../basic-auth';

/** A login: no whitespace, no colon (HTTP basic authorization splits at the first one); u is VARCHAR(64). */
const LOGIN = /^[^\s:]{1,64}$/;
/** Longest password accepted; it is hashed, so only a sanity bound. */
const MAX_PASSWORD = 1024;

/**
 * User accounts (spec "User accounts", plugins/sysapi/README.md) in
 * the user db, and login/logout. Account changes are written to the user db
 * at once, whatever [server] db_update says (spec: "changes to user accounts
 * are immediate"); a login that upgrades an old hash writes it at once too.
 */
export const plugin = definePlugin({
  name: 'sysapi-users',
  kind: 'sysapi',
  version: '1.0.0',
  needs: ['userdb'],
  start(ctx) {
    const { keys, log } = ctx;
    const tokens = keys.tokens;
    // with [server] userdb the accounts live in the database the controllers share (plugin cluster)
    const shared = ctx.hasService('cluster') ? ctx.service('cluster').userdb : undefined;
    const db: KeyUserStore = shared ?? ctx.service('userdb');
    /** A new password's hash: scrypt, or 3.3.2's while 3.3.2 controllers share the user db ([cluster] eva33_passwords). */
    const newHash = (pw: string): Promise<string> => (shared?.eva33Passwords ? Promise.resolve(eva33Hash(pw)) : hashPassword(pw));
    const users = new Map<string, UserRecord>(db.users().map((r) => [r.user, r]));
    /** Make account `u` what the shared db holds (undefined: gone); a changed one's tokens end, as where it was changed. */
    const apply = (u: string, rec: UserRecord | undefined): void => {
      const old = users.get(u);
      if (rec && old && old.password === rec.password && old.keys.join(',') === rec.keys.join(',')) return;
      if (rec) users.set(u, rec);
      else users.delete(u);
      if (old) tokens.dropUser(u);
    };
    if (shared) {
      ctx.onStop(shared.subscribe({
        user: apply,
        reload(_keys, all) {
          const now = new Set(all.map((r) => r.user));
          for (const u of [...users.keys()]) if (!now.has(u)) apply(u, undefined);
          for (const r of all) apply(r.user, r);
        },
      }));
    }
    const w = ctx.config.webapi;
    const throttle = new LoginThrottle(webapiLimits(w));
    const refusals = new RepeatLog(log, () => ctx.config.server.log_repeat_interval);
    ctx.metrics(() => [{ name: 'login_waiting', help: 'wrong login answers held back now (the tarpit)', value: throttle.waiting }]);

    /** Write one account's change (as memory holds it now); `undo` (memory) is run, and the row follows, when the write fails. */
    const save = (user: string, undo?: () => void) => writeOrFail(db, log, () => {
      const now = users.get(user);
      if (now) db.putUser(now);
      else db.deleteUser(user);
    }, undo);
    const user = (u: string): UserRecord => {
      const rec = users.get(u);
      if (!rec) throw notFound(`user ${u}`);
      return rec;
    };
    const existingKey = (a: string): string => {
      if (!keys.get(a)) throw notFound(`API key ${a}`);
      return a;
    };
    const password = (p: string): string => {
      if (p === '' || p.length > MAX_PASSWORD) throw invalidParams(`p: a password of 1 to ${MAX_PASSWORD} characters is required`);
      return p;
    };
    /** The key a user logs in with: the first of its ids that exists (old files may list several). */
    const keyOf = (rec: UserRecord): ApiKey | undefined => rec.keys.map((id) => keys.get(id)).find(Boolean);

    ctx.register({
      name: 'create_user',
      permission: 'master',
      params: { u: text('login').req(), p: text('password').req(), a: text('id of the API key to assign').req() },
      description: 'Create a user account bound to an API key.',
      returns: '{key, user}',
      async handler(p) {
        if (!LOGIN.test(p.u)) throw invalidParams('u: a login is 1 to 64 characters without spaces or colons');
        if (users.has(p.u)) throw alreadyExists(`user ${p.u}`);
        existingKey(p.a);
        const hash = await newHash(password(p.p));
        if (users.has(p.u)) throw alreadyExists(`user ${p.u}`); // created by a call that ran while we hashed
        const rec = { user: p.u, password: hash, keys: [p.a] };
        users.set(p.u, rec);
        // a failed write takes the account back out: an error answer leaves no user behind
        await save(p.u, () => { if (users.get(p.u) === rec) users.delete(p.u); });
        // key as the specification names it, key_id as EVA ICS 3.3 answered (its clients read that)
        return { key: p.a, key_id: p.a, user: p.u };
      },
    });

    ctx.register({
      name: 'destroy_user',
      returns: 'OK',
      permission: 'master',
      params: { u: text('login').req() },
      description: 'Destroy a user account; its tokens end at once.',
      async handler(p) {
        user(p.u);
        users.delete(p.u);
        tokens.dropUser(p.u);
        await save(p.u);
      },
    });

    ctx.register({
      name: 'get_user',
      changes: false,
      aliases: ['user_get'],
      permission: 'master',
      params: { u: text('login').req() },
      description: 'A user account.',
      returns: '{key, key_id (the same, as EVA ICS 3.3 named it), user}',
      handler(p) {
        const rec = user(p.u);
        const key = rec.keys.join(',');
        return { key, key_id: key, user: rec.user };
      },
    });

    ctx.register({
      name: 'list_users',
      changes: false,
      aliases: ['user_list'],
      permission: 'master',
      params: {},
      description: 'All user accounts.',
      returns: 'array of {key_id, user}',
      handler() {
        return [...users.values()]
          .sort((a, b) => (a.user < b.user ? -1 : a.user > b.user ? 1 : 0))
          .map((r) => ({ key_id: r.keys.join(','), user: r.user }));
      },
    });

    ctx.register({
      name: 'set_user_key',
      returns: 'OK',
      permission: 'master',
      params: { u: text('login').req(), a: text('id of the API key to assign').req() },
      description: "Bind a user account to another API key; the user's tokens end at once.",
      async handler(p) {
        const rec = { ...user(p.u), keys: [existingKey(p.a)] };
        users.set(p.u, rec);
        tokens.dropUser(p.u);
        await save(p.u);
      },
    });

    ctx.register({
      name: 'set_user_password',
      returns: 'OK',
      permission: 'master',
      params: { u: text('login').req(), p: text('new password').req() },
      description: "Set a user's password; the user's tokens end at once.",
      async handler(p) {
        user(p.u);
        const hash = await newHash(password(p.p));
        const rec = { ...user(p.u), password: hash }; // looked up again: the account may have changed meanwhile
        users.set(p.u, rec);
        tokens.dropUser(p.u);
        await save(p.u);
      },
    });

    const denied = () => accessDenied('invalid credentials');

    /** What login answers for a key; refused when the key may not be used from the caller's address. */
    const issue = async (key: ApiKey | undefined, call: CallContext, userName?: string) => {
      if (!key || !key.hostsAllow.has(call.ip)) throw denied();
      // after the password was found right: the account's holder may learn why
      if (key.expired()) throw accessDenied(`the API key of this account expired at ${key.expiresIso()}`);
      // with shared tokens, answered once the other controllers can know it; a token that cannot be shared is none
      const token = tokens.enabled ? await tokens.create(key.id, userName).catch((err: unknown) => {
        if (err instanceof ApiError) throw err; // the share's own word (its changes waiting at their bound; it logs that once)
        log.error(`token not shared with the other controllers: ${describe(err)}`);
        throw functionFailed('the shared user db is unreachable: the token could not be shared, no login until it is back');
      }) : undefined;
      return userName === undefined ? { key: key.id, token } : { key: key.id, token, user: userName };
    };

    /** A user's account when the password is right (an old hash is upgraded on the way); else denied. */
    const checkUser = async (u: string, pw: string): Promise<UserRecord> => {
      const rec = users.get(u);
      if (!rec) {
        await dummyVerify(pw); // as long as a real check: the answer must not tell which logins exist
        throw denied();
      }
      const verdict = await verifyPassword(pw, rec.password);
      if (!verdict.ok || users.get(u) !== rec) throw denied(); // wrong, or the account changed meanwhile
      // not in a shared db: an EVA ICS 3.3.2 controller sharing it checks the old hash, never scrypt
      if (verdict.upgrade && !shared) {
        try {
          const upgraded = { ...rec, password: await hashPassword(pw) };
          if (users.get(u) === rec) {
            users.set(u, upgraded);
            await save(u);
            log.info(`password hash of user ${u} upgraded to scrypt`);
          }
        } catch (err) {
          log.error(`password hash of user ${u} not upgraded: ${describe(err)}`);
        }
      }
      return users.get(u) ?? rec;
    };

    const userLogin = async (u: string, pw: string, call: CallContext) => issue(keyOf(await checkUser(u, pw)), call, u);

    /** A valid token usable from the caller's address, or denied. */
    const validToken = (token: string, call: CallContext) => {
      const found = token.startsWith('token:') ? keys.resolve(token) : undefined;
      if (!found || !found.key.hostsAllow.has(call.ip)) throw denied();
      return found;
    };

    /** A token check (login a=..., or a token as k): its information when it is valid; `mode` as EVA ICS 3.3 names it. */
    const tokenInfo = (token: string, call: CallContext) => {
      const found = validToken(token, call);
      const mode = found.readonly ? 'readonly' : 'normal';
      return found.user === undefined ? { key: found.key.id, token, mode } : { key: found.key.id, token, mode, user: found.user };
    };

    /**
     * login a=token with credentials (a key as k, or u and p) of the token's
     * key: the token becomes normal again (set_token_readonly undone).
     */
    const restore = async (p: { u?: string; p?: string; a: string }, call: CallContext) => {
      const found = validToken(p.a, call);
      if (p.u !== undefined) {
        if (keyOf(await checkUser(p.u, p.p ?? ''))?.id !== found.key.id) throw denied();
      } else if (call.token || call.key!.id !== found.key.id) {
        throw denied(); // another key, or a token (a token cannot vouch for itself)
      }
      tokens.setReadonly(p.a, false);
      return tokenInfo(p.a, call);
    };

    const attempt = (p: { u?: string; p?: string; a?: string }, call: CallContext) => {
      if (p.a !== undefined) return p.u !== undefined || (call.key && !call.assigned) ? restore({ ...p, a: p.a }, call) : tokenInfo(p.a, call);
      if (p.u !== undefined) return userLogin(p.u, p.p ?? '', call);
      if (call.key && !call.assigned) return call.token ? tokenInfo(call.token, call) : issue(call.key, call);
      const basic = basicCredentials(call.headers);
      if (basic) return userLogin(basic.user, basic.password, call);
      if (call.key) return issue(call.key, call); // the key hosts_assign gives this address
      throw accessDenied('login needs k, u and p, a, or HTTP basic authorization');
    };

    ctx.register({
      name: 'login',
      permission: 'none',
      params: { u: text('login'), p: text('password'), a: text('token to check; with k, or u and p, of its key: made normal again') },
      description: 'Exchange a key, a login and password (also as HTTP basic authorization) for a token, or check a token '
        + '(with the credentials of its key: a read-only token becomes normal again).',
      returns: '{key: key id, token, user}; a token check: {key, token, mode: normal or readonly, user}',
      async handler(p, call) {
        // a shared user db away: what is held here may be stale (a password changed, a user removed elsewhere)
        if (shared && !shared.connected) throw functionFailed(`the shared user db is unreachable: no login until it is back`);
        // the credentials are checked first: valid ones pass at once; an
        // address with too many wrong ones booked is refused unchecked
        const wait = throttle.begin(call.ip);
        if (wait > 0) {
          refusals.note('logins refused unchecked (too many wrong ones booked)', call.ip);
          throw accessDenied(`too many failed logins from this address, retry in ${Math.ceil(wait / 1000)} s`);
        }
        let result;
        try {
          result = await attempt(p, call);
        } catch (err) {
          if (err instanceof ApiError && (err.kind === 'busy' || err.kind === 'function_failed')) {
            throttle.end(call.ip, true, ''); // not checked (the hashing queue is full) or not shared: no wrong guess was made
            throw err;
          }
          // what was guessed, so the same wrong credentials again cost nothing
          const guess = JSON.stringify([p.u, p.p, p.a, call.token, call.headers.authorization]);
          const hold = throttle.end(call.ip, false, guess);
          refusals.note('wrong logins refused', call.ip);
          await throttle.hold(hold);
          throw err;
        }
        throttle.end(call.ip, true, '');
        return result;
      },
    });

    ctx.register({
      name: 'logout',
      returns: 'OK',
      permission: 'any',
      params: {},
      description: 'End the token given as k.',
      handler(_p, call) {
        if (!call.token) throw new ApiError('access_denied', 'logout needs a token as k');
        tokens.drop(call.token);
      },
    });
  },
});
