import path from 'node:path';
import { definePlugin } from '../../../core/plugin';
import { text, bool, any } from '../../../core/schema';
import { ApiKey, parseExpires } from '../../../core/auth/apikey';
import { generateKeyValue } from '../../../core/auth/keys';
import { alreadyExists, functionFailed, invalidParams, notFound } from '../../../core/errors';
import { UserDb, type KeyUserStore } from '../userdb';
import type { ApiKeyProps } from '../../../core/auth/apikey';
import { ClusterSettings } from '../../cluster/contract';
import { describe } from '../../../core/log';
import { healthReason } from '../../../core/health';
import { AllNetworks, KeyProps, expiresParam, setKeyProp } from '../keyprops';
import { DynamicKeysSync, writeOrFail } from '../dynamic-keys';

/** A key id: what EVA ICS 3.3 stored (k_id is VARCHAR(64)); no comma, which separates ids in users.k. */
const KEY_ID = /^[^\s,]{1,64}$/;

/**
 * API key management (spec "API keys", plugins/sysapi/README.md): dynamic keys
 * in the user db runtime/db/<product>.db. Opens the user db for the
 * controller and offers it to sysapi-users as service `userdb`.
 */
export const plugin = definePlugin({
  name: 'sysapi-keys',
  kind: 'sysapi',
  version: '1.0.0',
  provides: ['userdb'],
  async start(ctx) {
    const { keys, log } = ctx;
    // with [server] userdb the keys and users live in the database the controllers share (plugin cluster)
    const shared = ctx.hasService('cluster') ? ctx.service('cluster').userdb : undefined;
    if (!shared && ctx.config.section('server', ClusterSettings).userdb.trim()) {
      // never this controller's own file instead: its keys would silently part from the others'
      throw healthReason(new Error('the shared user db ([server] userdb) did not start'), 'the shared user db did not start: dynamic keys and users are refused');
    }
    // a damaged file makes start fail (logged, plugin skipped): never overwrite what we could not read;
    // without a file, nothing is opened until the first key or user is created (plugins/sysapi/userdb.ts)
    // /health tells it too (degraded): only an ERROR line would leave every dynamic key and user refused unnoticed
    const db = await UserDb.open(ctx.paths.userDb, ctx.writes).catch((err: unknown) => {
      throw healthReason(err, `user db ${path.relative(ctx.paths.dir, ctx.paths.userDb)} cannot be read: dynamic keys and users are refused`);
    });
    const store: KeyUserStore = shared ?? db;
    /** Make key `id` what the user db holds (undefined: it is gone); a static key of that id stays. */
    const apply = (id: string, props: ApiKeyProps | undefined): void => {
      const old = keys.get(id);
      if (old && !old.dynamic) {
        if (props) log.warning(`user db key ${id} skipped: a key of that id is in ${ctx.paths.apikeysFile}`);
        return;
      }
      if (!props) {
        if (old) keys.remove(id);
        return;
      }
      let key: ApiKey;
      try {
        if (!props.key) throw new Error('no key value');
        key = new ApiKey({ ...props, expires: parseExpires(props.expires) });
      } catch (err) {
        log.warning(`user db key ${id} skipped: ${describe(err)}`);
        return;
      }
      if (old && JSON.stringify(old.serialize()) === JSON.stringify(key.serialize())) return;
      const holder = keys.holder(key.key);
      if (holder && holder.id !== id) {
        log.warning(`user db key ${id} skipped: key ${holder.id} has the same value`);
        return;
      }
      keys.add(key);
      if (old) keys.changed(key); // its tokens end, as on the controller that changed it
    };
    for (const props of store.keys()) apply(props.id, props);
    if (shared) {
      // what another controller changed: its row, or everything again after an outage
      const unsubscribe = shared.subscribe({
        key: apply,
        reload(all) {
          const ids = new Set(all.map((p) => p.id));
          for (const k of keys.all()) if (k.dynamic && !ids.has(k.id)) keys.remove(k.id);
          for (const p of all) apply(p.id, p);
        },
      });
      ctx.onStop(unsubscribe);
    }
    if (db.schemaChanged) await writeOrFail(db, log, () => undefined);
    // shared keys are written at once whatever db_update says: the other controllers see them only then
    const sync = new DynamicKeysSync(store, keys, () => shared !== undefined || ctx.config.server.db_update === 'instant', log);
    ctx.provide('userdb', db);
    // with on_exit, the controller runs every saver before plugins stop
    ctx.onSave(() => sync.saveAll());
    ctx.onStop(async () => {
      await db.flush();
      for (const k of keys.all()) if (k.dynamic) keys.remove(k.id);
      db.close();
    });

    /** A key the API may change: it exists, is dynamic, is not master. */
    const managed = (id: string): ApiKey => {
      const key = keys.get(id);
      if (!key) throw notFound(`API key ${id}`);
      if (key.master || !key.dynamic) throw functionFailed(`API key ${id} is a master or static key: it cannot be changed through the API`);
      return key;
    };
    /** A fresh key value no other key has (a lookup finds a key by its value). */
    const newKeyValue = (): string => {
      let value = generateKeyValue();
      while (keys.hasValue(value)) value = generateKeyValue();
      return value;
    };
    const keyId = text('key id').req();
    const saveParam = bool('write the key to the user db now, whatever [server] db_update says');
    const expiresDecl = any('when the key expires: Unix seconds or ISO 8601 (2026-12-31T23:59:59Z; without a zone: local time); absent or empty: never');

    ctx.register({
      name: 'create_key',
      permission: 'master',
      params: { i: keyId, expires: expiresDecl, save: saveParam },
      description: 'Create a dynamic API key (usable from all networks, no rights until set_key_prop gives them).',
      returns: 'the API key object (with expires and expired when it expires)',
      async handler(p) {
        if (!KEY_ID.test(p.i)) throw invalidParams('i: a key id is 1 to 64 characters without spaces or commas');
        const expires = expiresParam(p.expires);
        if (keys.get(p.i)) throw alreadyExists(`API key ${p.i}`);
        const value = newKeyValue();
        const key = new ApiKey({ id: p.i, key: value, dynamic: true, lists: { hosts_allow: [...AllNetworks] }, expires });
        keys.add(key);
        // a failed write takes the key back out: an error answer leaves no key behind
        await sync.changed(key.id, p.save, () => { if (keys.get(key.id) === key) keys.remove(key.id); });
        return key.serialize();
      },
    });

    ctx.register({
      name: 'destroy_key',
      returns: 'OK',
      permission: 'master',
      params: { i: keyId },
      description: 'Destroy a dynamic API key; its tokens end at once.',
      async handler(p) {
        const key = managed(p.i);
        keys.remove(key.id);
        await sync.changed(key.id);
      },
    });

    ctx.register({
      name: 'list_key_props',
      changes: false,
      permission: 'master',
      params: { i: keyId, save: saveParam },
      description: 'Properties of an API key, with its value.',
      returns: 'the API key object',
      async handler(p) {
        const key = keys.get(p.i);
        if (!key) throw notFound(`API key ${p.i}`);
        if (p.save && sync.pending(key.id)) await sync.changed(key.id, true);
        return key.serialize();
      },
    });

    ctx.register({
      name: 'list_keys',
      changes: false,
      permission: 'master',
      params: {},
      description: 'All API keys with their rights (without their values).',
      returns: 'array of {key_id, master, dynamic, sysfunc, mcp, allow, groups, items, ...; expires (Unix seconds) and expired for a key that expires}',
      handler() {
        // as 3.3 orders them: master keys first, each part by id
        return keys.all()
          .sort((a, b) => Number(b.master) - Number(a.master) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
          .map((k) => ({ ...k.acl(), cdata: [...k.lists.cdata], dynamic: k.dynamic, sysfunc: k.sysfunc, mcp: k.mcp, ...k.expiry() }));
      },
    });

    ctx.register({
      name: 'regenerate_key',
      permission: 'master',
      params: { i: keyId, save: saveParam },
      description: 'Give a dynamic API key a new value; its tokens end at once.',
      returns: '{key: the new value}',
      async handler(p) {
        const key = managed(p.i);
        const value = newKeyValue();
        keys.rekey(key, value);
        await sync.changed(key.id, p.save);
        return { key: value };
      },
    });

    ctx.register({
      name: 'set_key_prop',
      returns: 'OK',
      permission: 'master',
      params: {
        i: keyId,
        p: text(`property: ${KeyProps.join(', ')}`).req(),
        v: any('value; lists as a JSON array or a comma-separated string; expires as Unix seconds or ISO 8601; empty or absent revokes (expires: never)'),
        save: saveParam,
      },
      description: 'Set a property of a dynamic API key; its tokens end at once.',
      async handler(p) {
        const key = managed(p.i);
        setKeyProp(keys, key, p.p, p.v);
        keys.changed(key);
        await sync.changed(key.id, p.save);
      },
    });
  },
});
