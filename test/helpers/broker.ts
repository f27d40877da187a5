import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import tls from 'node:tls';
import path from 'node:path';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { until } from './wait';
import { switchableServer } from './switchable-server';
import mqtt, { type MqttClient, type IClientOptions } from 'mqtt';
import { freePort } from './ports';

/**
 * A real MQTT broker for tests: aedes in this process by default, or, when
 * MQTT_BROKER=mosquitto (or MQTT_PROTOCOL=5: aedes speaks no MQTT 5), a
 * mosquitto child process on an ephemeral port.
 * Both can be stopped and started again on the same port (outage tests);
 * sessions and retained messages survive that (aedes keeps its instance,
 * mosquitto its persistence file), as they would on a real broker restart.
 */
/** What a broker needs from its user: a place to register its cleanup (an ava test, or a benchmark). */
export interface Owner { teardown(fn: () => unknown): void }

export interface BrokerOptions {
  /** overrides MQTT_BROKER */
  kind?: 'aedes' | 'mosquitto';
  /**
   * subscriptions to topics under these prefixes are refused. mosquitto's
   * ACL file accepts every subscription (it filters at delivery), so there
   * its dynamic security plugin refuses them (see `dynsecPlugin`)
   */
  denyPrefixes?: string[];
  /** publications to topics under these prefixes are refused (mosquitto only, its dynamic security plugin) */
  denyPublish?: string[];
  /** extra lines for mosquitto.conf (before the listener) */
  mosquittoConf?: string[];
  /** username -> password; when given, anonymous clients are refused */
  users?: Record<string, string>;
  /** TLS listener: server cert and key (PEM files); `ca` set requires client certificates signed by it */
  tls?: { cert: string; key: string; ca?: string };
}

export interface Broker {
  kind: 'aedes' | 'mosquitto';
  host: string;
  port: number;
  /** stop listening and drop every client (an outage) */
  stop(): Promise<void>;
  /** listen again on the same port */
  start(): Promise<void>;
  /** the client ids connected now, as the broker sees them (aedes only) */
  clients?(): string[];
}

/** The MQTT version the test helpers' mqtt notifiers speak: MQTT_PROTOCOL=5, else 3.1.1. */
export const mqttProtocol = (): '3.1.1' | '5' => (process.env.MQTT_PROTOCOL === '5' ? '5' : '3.1.1');

export const brokerKind = (): 'aedes' | 'mosquitto' => (process.env.MQTT_BROKER === 'mosquitto' || mqttProtocol() === '5' ? 'mosquitto' : 'aedes');

/**
 * mosquitto's dynamic security plugin (Debian's mosquitto package has it),
 * or undefined: what refuses subscriptions and publications there.
 */
export function dynsecPlugin(): string | undefined {
  const name = 'mosquitto_dynamic_security.so';
  const dirs = ['/usr/lib', '/usr/local/lib'];
  for (const d of [...dirs]) {
    try { for (const e of fs.readdirSync(d)) if (e.endsWith('-linux-gnu')) dirs.push(path.join(d, e)); } catch { /* not there */ }
  }
  return dirs.map((d) => path.join(d, name)).find((f) => fs.existsSync(f));
}

/**
 * The dynamic security plugin's file: every client (the users given, or
 * anonymous ones) may do anything but what `deny` lists. Passwords as the
 * plugin keeps them: PBKDF2-SHA512 of 101 rounds, a 12-byte salt.
 */
function dynsecConfig(users: Record<string, string> | undefined, deny: { subscribe: string[]; publish: string[] }): string {
  const allow = ['publishClientSend', 'publishClientReceive', 'subscribePattern', 'unsubscribePattern'].map((acltype) => ({ acltype, topic: '#', allow: true }));
  const denied = [
    ...deny.subscribe.map((p) => ({ acltype: 'subscribePattern', topic: `${p}#`, allow: false, priority: 10 })),
    ...deny.publish.map((p) => ({ acltype: 'publishClientSend', topic: `${p}#`, allow: false, priority: 10 })),
  ];
  const role = { rolename: 'test', acls: [...denied, ...allow] };
  const clients = Object.entries(users ?? {}).map(([username, password]) => {
    const salt = crypto.randomBytes(12);
    const hash = crypto.pbkdf2Sync(password, salt, 101, 64, 'sha512');
    return { username, password: hash.toString('base64'), salt: salt.toString('base64'), iterations: 101, roles: [{ rolename: 'test' }] };
  });
  return JSON.stringify({
    clients, roles: [role], groups: [{ groupname: 'anonymous', roles: [{ rolename: 'test' }] }],
    ...(users ? {} : { anonymousGroup: 'anonymous' }),
    defaultACLAccess: { publishClientSend: false, publishClientReceive: true, subscribe: false, unsubscribe: true },
  });
}

/** Start a broker of the kind MQTT_BROKER asks for; it is closed when the test ends. */
export async function startBroker(t: Owner, opts: BrokerOptions = {}): Promise<Broker> {
  return (opts.kind ?? brokerKind()) === 'mosquitto' ? startMosquitto(t, opts) : startAedes(t, opts);
}

async function startAedes(t: Owner, opts: BrokerOptions): Promise<Broker> {
  // aedes is an ES module; the tests are CommonJS
  const { Aedes } = await import('aedes');
  const aedes = await Aedes.createBroker({
    authenticate: (_client, username, password, done) => {
      if (!opts.users) return done(null, true);
      const ok = username !== undefined && opts.users[username] !== undefined && password?.toString() === opts.users[username];
      if (ok) return done(null, true);
      const err = Object.assign(new Error('bad username or password'), { returnCode: 4 });
      done(err as any, false);
    },
    authorizeSubscribe: (_client, sub, done) => {
      const denied = (opts.denyPrefixes ?? []).some((p) => sub.topic.startsWith(p));
      done(null, denied ? null : sub);
    },
  });
  const server = switchableServer(() => {
    const handle = (s: net.Socket) => aedes.handle(s);
    return opts.tls
      ? tls.createServer({
        cert: fs.readFileSync(opts.tls.cert), key: fs.readFileSync(opts.tls.key),
        ...(opts.tls.ca ? { ca: fs.readFileSync(opts.tls.ca), requestCert: true, rejectUnauthorized: true } : {}),
      }, handle)
      : net.createServer(handle);
  });
  await server.listen();
  t.teardown(async () => {
    await server.stop();
    await new Promise<void>((r) => aedes.close(() => r()));
  });
  return {
    kind: 'aedes', host: '127.0.0.1', get port() { return server.port; }, stop: () => server.stop(), start: () => server.listen(),
    // aedes keeps its connected clients by id (not in its type declarations)
    clients: () => Object.keys((aedes as unknown as { clients: Record<string, unknown> }).clients),
  };
}


/** Resolves when something accepts TCP connections on the port; rejects after `ms` or when `gone` says the process ended. */
async function waitListening(port: number, ms: number, gone: () => string | undefined): Promise<void> {
  await until(`the broker listening on ${port}`, async () => {
    const ok = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => { c.destroy(); resolve(true); });
      c.once('error', () => resolve(false));
    });
    const why = ok ? undefined : gone();
    if (why !== undefined) throw new Error(why);
    return ok;
  }, ms);
}

async function startMosquitto(t: Owner, opts: BrokerOptions): Promise<Broker> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mosq-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const lines = (port: number) => {
    const l = [
      // started as root, mosquitto would switch to its own user, which cannot read this test's files
      ...(process.getuid?.() === 0 ? ['user root'] : []),
      'per_listener_settings false',
      `persistence true`, `persistence_location ${dir}/`, 'autosave_interval 0',
      'log_dest stderr', 'log_type error', 'log_type warning',
      `allow_anonymous ${opts.users ? 'false' : 'true'}`,
      ...(opts.mosquittoConf ?? []),
    ];
    const deny = { subscribe: opts.denyPrefixes ?? [], publish: opts.denyPublish ?? [] };
    if (deny.subscribe.length || deny.publish.length) {
      const plugin = dynsecPlugin();
      if (!plugin) throw new Error('refusing subscriptions or publications needs mosquitto_dynamic_security.so');
      const file = path.join(dir, 'dynsec.json');
      if (!fs.existsSync(file)) fs.writeFileSync(file, dynsecConfig(opts.users, deny), { mode: 0o600 });
      l.push(`plugin ${plugin}`, `plugin_opt_config_file ${file}`);
    } else if (opts.users) {
      const file = path.join(dir, 'passwd');
      fs.writeFileSync(file, '', { mode: 0o600 });
      for (const [u, p] of Object.entries(opts.users)) execFileSync('mosquitto_passwd', ['-b', file, u, p]);
      l.push(`password_file ${file}`);
    }
    l.push(`listener ${port} 127.0.0.1`);
    if (opts.tls) {
      l.push(`certfile ${opts.tls.cert}`, `keyfile ${opts.tls.key}`, `cafile ${opts.tls.ca ?? opts.tls.cert}`);
      if (opts.tls.ca) l.push('require_certificate true');
    }
    return l.join('\n') + '\n';
  };
  let proc: ChildProcess | undefined;
  let port = 0;
  let output = '';
  const conf = path.join(dir, 'mosquitto.conf');
  const launch = async () => {
    fs.writeFileSync(conf, lines(port));
    const p = spawn('mosquitto', ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
    proc = p;
    let exited: string | undefined;
    p.once('exit', (code, sig) => { exited = `mosquitto exited (${code ?? sig}): ${output}`; });
    p.once('error', (err) => { exited = `mosquitto did not start: ${err.message}`; });
    p.stdout!.on('data', (d: Buffer) => { output = (output + d.toString()).slice(-4000); });
    p.stderr!.on('data', (d: Buffer) => { output = (output + d.toString()).slice(-4000); });
    await waitListening(port, 10_000, () => exited);
  };
  const stop = async () => {
    const p = proc;
    proc = undefined;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill('SIGTERM'); // mosquitto writes its persistence file on SIGTERM
    await gone;
  };
  // another process may take the free port before mosquitto binds it: try a few
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    try {
      await launch();
      break;
    } catch (err) {
      await stop();
      if (attempt >= 4) throw err;
    }
  }
  t.teardown(() => { if (proc && proc.exitCode === null) proc.kill('SIGKILL'); });
  return { kind: 'mosquitto', host: '127.0.0.1', get port() { return port; }, stop, start: launch };
}

/** `properties`: what an MQTT 5 publication carried (a subscriber connected with protocolVersion 5) */
export interface Received { topic: string; payload: string; qos: number; retain: boolean; properties?: Record<string, unknown> }

/** An independent MQTT client (not the controller's connection) that records what it receives. */
export class Subscriber {
  readonly messages: Received[] = [];
  private waiters: (() => void)[] = [];

  private constructor(readonly client: MqttClient) {
    client.on('message', (topic, payload, packet) => {
      const m: Received = { topic, payload: payload.toString(), qos: packet.qos, retain: packet.retain };
      if (packet.properties) m.properties = packet.properties as Record<string, unknown>;
      this.messages.push(m);
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** A subscriber (QoS 1) whose session outlives a broker restart: what is published while it is away waits for it. */
  static async lasting(t: Owner, broker: Broker, filter: string): Promise<Subscriber> {
    const sub = await Subscriber.connect(t, broker, { clientId: `w-${crypto.randomBytes(4).toString('hex')}`, clean: false });
    await sub.subscribe(filter, 1);
    return sub;
  }

  static async connect(t: Owner, broker: Broker, opts: IClientOptions = {}): Promise<Subscriber> {
    const client = mqtt.connect({
      host: broker.host, port: broker.port, protocolVersion: 4, reconnectPeriod: 200, connectTimeout: 5000, ...opts,
    });
    t.teardown(() => new Promise<void>((r) => client.end(true, {}, () => r())));
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
    });
    return new Subscriber(client);
  }

  async subscribe(filter: string | string[], qos: 0 | 1 | 2 = 2): Promise<void> {
    await this.client.subscribeAsync(filter, { qos });
  }

  async publish(topic: string, payload: string, qos: 0 | 1 | 2 = 1, retain = false): Promise<void> {
    await this.client.publishAsync(topic, payload, { qos, retain });
  }

  on(topic: string): Received[] {
    return this.messages.filter((m) => m.topic === topic);
  }

  /** Wait until `pred` holds over what was received; rejects with what arrived after `ms`. */
  async waitFor(pred: (msgs: Received[]) => boolean, ms = 10_000, what = 'messages'): Promise<Received[]> {
    const until = Date.now() + ms;
    while (!pred(this.messages)) {
      const left = until - Date.now();
      if (left <= 0) {
        throw new Error(`timed out waiting for ${what}; received: ${JSON.stringify(this.messages.slice(-20))}`);
      }
      await new Promise<void>((r) => {
        const timer = setTimeout(r, Math.min(left, 200));
        this.waiters.push(() => { clearTimeout(timer); r(); });
      });
    }
    return this.messages;
  }
}

/** A self-signed certificate for 127.0.0.1/localhost, made with the openssl CLI; undefined when openssl is missing. */
export function selfSignedCert(dir: string): { cert: string; key: string } | undefined {
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2',
      '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  return { cert, key };
}
