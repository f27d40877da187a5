import path from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { Paths } from '../../../core/paths';
import { Products, type Product } from '../../../core/defaults';
import { describe } from '../../../core/log';
import type { Subject, Subscription } from '../contract';
import { normalizeSubscription } from '../host/config';
import { HiddenPassword, withoutSecrets } from '../host/redaction';
import { DefaultLogLevel } from '../host/filter';
import { loadTypes, type TypeCatalogue } from './notifier-types';
import { CliError, NotifierFiles, checked, knownFields, setField, type RawConfig } from './notifier-files';
import { askController } from './notifier-live';
import { testHere } from './notifier-here';
import { Config } from '../../../core/config';
import { parseProps, targetOf, typeHelp } from '../host/settings';
import { PackageVersion } from '../../../core/version';
import { checkIniFiles, configErrorText } from '../../../core/settings/check';
import { CONFIG_EXIT_CODE, ConfigError, suggest } from '../../../core/settings/schema';
import { describeSetting } from '../../../core/schema';
import { CommonSettings, FileFields, NotifierSubjects } from '../host/defaults';

/**
 * The notifier command line (uc-notifier, lm-notifier, sfa-notifier): edits
 * the notifier files of a controller directory; the controller reads them at
 * its next start (spec "Notifier command-line management").
 */

/**
 * Exit codes: 0 done, 1 the command failed (not found, refused, test failed), 2 bad usage,
 * 3 the controller's settings (etc/<product>.ini, key file) are in error, as the controller says at start.
 */
export const ExitCodes = { ok: 0, failed: 1, usage: 2, config: CONFIG_EXIT_CODE };

const APPLY = 'restart the controller to apply';

/** uc/lm/sfa from the name the tool was started by (uc-notifier ...), else uc. */
export function productOf(invokedAs: string | undefined): Product {
  const m = /^(uc|lm|sfa)-notifier/.exec(path.basename(invokedAs ?? ''));
  return (m?.[1] as Product | undefined) ?? 'uc';
}

export interface Io { out(text: string): void; err(text: string): void }

interface Globals { dir: string; product: Product }

const SubjectWords = 'state, action, log or server';

/** Align columns of text rows. */
function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n') + '\n';
}

function splitComma(v: string): string[] {
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}

/** The subscription `subscribe` builds from its options; throws CliError when they do not fit the subject. */
/**
 * The type name a new file gets where EVA ICS 3.3.2 knows the type by
 * another name: it loads the json web hook only as `http-json` (this
 * controller reads both), so a file written here loads in either.
 */
const FileTypeNames: Record<string, string> = { json: 'http-json' };

export function subscriptionOf(subject: string, o: { level?: string; types?: string; groups?: string; items?: string; statuses?: string }): Subscription {
  if (!NotifierSubjects.includes(subject as Subject)) throw new CliError(`subject must be ${SubjectWords}, not ${subject}`);
  const raw: Record<string, unknown> = { subject };
  if (subject === 'server') {
    // the controller's own events (restart): nothing to select
    for (const [flag, v] of [['-l', o.level], ['-v', o.types], ['-g', o.groups], ['-I', o.items], ['-a', o.statuses]] as const) {
      if (v !== undefined) throw new CliError(`${flag} is not for server subscriptions`);
    }
  } else if (subject === 'log') {
    for (const [flag, v] of [['-v', o.types], ['-g', o.groups], ['-I', o.items], ['-a', o.statuses]] as const) {
      if (v !== undefined) throw new CliError(`${flag} is for state and action subscriptions, not log`);
    }
    raw.level = o.level ?? DefaultLogLevel;
  } else {
    if (o.level !== undefined) throw new CliError('-l is for log subscriptions');
    if (o.statuses !== undefined && subject !== 'action') throw new CliError('-a is for action subscriptions');
    const byType = o.types !== undefined || o.groups !== undefined;
    if (byType && (o.types === undefined || o.groups === undefined)) throw new CliError('types (-v) and groups (-g) go together');
    if (!byType && o.items === undefined) throw new CliError(`a ${subject} subscription needs types (-v) with groups (-g), or items (-I)`);
    if (o.types !== undefined) raw.types = splitComma(o.types);
    if (o.groups !== undefined) raw.groups = splitComma(o.groups);
    if (o.items !== undefined) raw.items = splitComma(o.items);
    if (o.statuses !== undefined) raw.action_status = splitComma(o.statuses);
    for (const f of ['types', 'groups', 'items', 'action_status']) {
      if (Array.isArray(raw[f]) && !(raw[f] as string[]).length) throw new CliError(`an empty list for ${f}`);
    }
  }
  try {
    return normalizeSubscription(raw);
  } catch (err) {
    throw new CliError(describe(err));
  }
}

function show(v: unknown): string {
  if (v === undefined || v === null) return '';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

/** Build the program; actions write through `io`. */
function program(io: Io, defaultProduct: Product, catalogue: TypeCatalogue): Command {
  const cmd = new Command()
    .name(`${defaultProduct}-notifier`)
    .description('Manage the notifiers of a controller; changes apply at its next start')
    .version(PackageVersion)
    .option('-d, --dir <dir>', 'controller directory', process.cwd())
    .addOption(new Option('-p, --product <product>', 'controller kind').choices([...Products]).default(defaultProduct))
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) });

  const ctx = async () => {
    const g = cmd.opts<Globals>();
    const paths = new Paths(g.dir, g.product);
    // the controller's settings check (core/settings), with the same plugins: a broken ini is told here as at start
    const findings = checkIniFiles(paths, catalogue.plugins);
    if (findings.some((f) => f.level === 'error')) throw new ConfigError(findings);
    const files = new NotifierFiles(paths.notifyDir);
    for (const p of catalogue.problems) io.err(`warning: notifier plugin ${p}\n`);
    return { paths, files, types: catalogue.types };
  };
  /** Read, change, check and write one notifier file. */
  const edit = async (id: string, change: (raw: RawConfig, c: Awaited<ReturnType<typeof ctx>>) => string) => {
    const c = await ctx();
    const raw = c.files.read(id);
    const said = change(raw, c);
    await c.files.write(id, raw, c.types);
    io.out(`${said}; ${APPLY}\n`);
  };
  const typeOf = (raw: RawConfig, id: string, c: Awaited<ReturnType<typeof ctx>>) => checked(raw, id, c.types).type;

  cmd.command('list')
    .description('List the notifiers: type, id, status, target')
    .action(async () => {
      const c = await ctx();
      const rows = [['TYPE', 'ID', 'STATUS', 'TARGET']];
      for (const id of c.files.ids()) {
        try {
          const { cfg, type } = checked(c.files.read(id), id, c.types);
          rows.push([cfg.type, id, cfg.enabled ? 'enabled' : 'disabled', targetOf(type, cfg)]);
        } catch (err) {
          rows.push(['?', id, 'unusable', describe(err)]);
        }
      }
      io.out(table(rows));
    });

  cmd.command('test')
    .description('Test the endpoint of a notifier: by the running controller of the directory when it answers (test_notifier, '
      + 'with the key file\'s master key), else from here (mqtt: publish to [space]/test; web hooks: a request of subject test; '
      + 'sparkplug: the broker connection only)')
    .argument('<id>', 'notifier id')
    .action(async (id: string) => {
      const c = await ctx();
      const { cfg, type } = checked(c.files.read(id), id, c.types);
      const config = new Config(c.paths);
      const asked = await askController(c.paths, config, id, cfg.timeout ?? config.server.timeout);
      if (asked.by === 'controller') {
        const how = `tested by the running controller at ${asked.url}`;
        if (asked.failed !== undefined) throw new CliError(`${id}: test failed: ${asked.failed} (${how})`);
        io.out(`${id}: test passed (${how})\n`);
        return;
      }
      const how = `tested by the command line: ${asked.why}`;
      let what: string | undefined;
      try {
        what = await testHere(c.paths, cfg, type);
      } catch (err) {
        throw new CliError(`${id}: test failed: ${describe(err)} (${how})`);
      }
      io.out(`${id}: test passed (${how}${what ? `; ${what}` : ''})\n`);
    });

  cmd.command('create')
    .description('Create a notifier (disabled unless -y). PROPS: TYPE:VALUE of a type below (mqtt:[user:password@]host[:port], db:<file>[:keep], json:<uri>)')
    .option('-s, --space <space>', 'notification space')
    .option('-t, --timeout <seconds>', 'endpoint timeout, seconds')
    .option('-y, --enable', 'enable it at once')
    .argument('<id>', 'notifier id')
    .argument('<props>', 'TYPE:endpoint')
    .action(async (id: string, props: string, o: { space?: string; timeout?: string; enable?: boolean }) => {
      const c = await ctx();
      if (c.files.exists(id)) throw new CliError(`notifier ${id} already exists`);
      const colon = props.indexOf(':');
      const typeName = colon > 0 ? props.slice(0, colon) : '';
      const type = c.types.get(typeName);
      if (!type) throw new CliError(`PROPS must start with a notifier type (${[...c.types.keys()].sort().join(', ')}), as in json:http://host/path`);
      let fields: Record<string, unknown>;
      try {
        fields = parseProps(type, props.slice(colon + 1));
      } catch (err) {
        throw new CliError(describe(err));
      }
      const raw: RawConfig = { id, type: FileTypeNames[type.name] ?? type.name, enabled: !!o.enable };
      if (o.space !== undefined) raw.space = o.space;
      if (o.timeout !== undefined) {
        const n = Number(o.timeout);
        if (!Number.isFinite(n) || n <= 0) throw new CliError(`-t must be a number of seconds above 0, not ${o.timeout}`);
        raw.timeout = n;
      }
      Object.assign(raw, fields, { events: [] });
      await c.files.write(id, raw, c.types);
      io.out(`notifier ${id} (${type.name}) created${o.enable ? ', enabled' : ', disabled'}; ${APPLY}\n`);
    });

  cmd.command('props')
    .description('Show the properties of a notifier (defaults for those not set)')
    .argument('<id>', 'notifier id')
    .action(async (id: string) => {
      const c = await ctx();
      const file = c.files.read(id);
      const type = typeOf(file, id, c);
      const raw = withoutSecrets(file, type);
      const rows = [['PROPERTY', 'VALUE']];
      const known = knownFields(type);
      rows.push(['id', id], ['type', type.name]);
      for (const [f, d] of Object.entries(known)) rows.push([f, show(raw[f] ?? d)]);
      for (const [f, v] of Object.entries(raw)) if (!(f in known) && !['id', 'type', 'events'].includes(f)) rows.push([f, show(v)]);
      io.out(table(rows));
    });

  cmd.command('set')
    .description('Set a property; without a value it returns to its default. Object members as field.member (qos.state 2)')
    .argument('<id>', 'notifier id')
    .argument('<property>', 'property name')
    .argument('[value]', 'new value')
    .action((id: string, prop: string, value: string | undefined) => edit(id, (raw, c) => {
      const type = typeOf(raw, id, c);
      setField(raw, type, prop, value);
      if (value === undefined) return `notifier ${id}: ${prop} unset`;
      return `notifier ${id}: ${prop} = ${type.settings[prop]?.secret || prop === 'password' ? HiddenPassword : value}`;
    }));

  cmd.command('get_config')
    .description('Show the whole configuration of a notifier, subscriptions included (a password reads <hidden>)')
    .argument('<id>', 'notifier id')
    .action(async (id: string) => {
      const c = await ctx();
      const file = c.files.read(id);
      io.out(JSON.stringify(withoutSecrets(file, c.types.get(String(file.type))), null, 2) + '\n');
    });

  cmd.command('subscribe')
    .description('Subscribe a notifier to a subject (state, action, log, server: the controller\'s restart); replaces its subscription to that subject')
    .argument('<subject>', SubjectWords)
    .argument('<id>', 'notifier id')
    .option('-l, --level <level>', 'log: lowest level (10, 20, 30, 40, 50 or a name; default 20)')
    .option('-v, --types <types>', 'state/action: item types, comma separated, or #')
    .option('-g, --groups <groups>', 'state/action: groups, comma separated, or #')
    .option('-I, --items <items>', 'state/action: item ids, comma separated')
    .option('-a, --statuses <statuses>', 'action: statuses, comma separated, or # for all')
    .action((subject: string, id: string, o: Record<string, string | undefined>) => edit(id, (raw) => {
      const sub = subscriptionOf(subject, o);
      const events = Array.isArray(raw.events) ? (raw.events as Record<string, unknown>[]) : [];
      raw.events = [...events.filter((e) => e?.subject !== subject), sub];
      return `notifier ${id}: subscribed to ${subject}`;
    }));

  cmd.command('unsubscribe')
    .description('Remove the subscription to a subject, or every subscription when no subject is given')
    .argument('<subject-or-id>', `subject (${SubjectWords}), or the notifier id`)
    .argument('[id]', 'notifier id, when a subject is given')
    .action((first: string, second: string | undefined) => {
      const [subject, id] = second === undefined ? [undefined, first] : [first, second];
      if (subject !== undefined && !NotifierSubjects.includes(subject as Subject)) throw new CliError(`subject must be ${SubjectWords}, not ${subject}`);
      return edit(id, (raw) => {
        const events = Array.isArray(raw.events) ? (raw.events as Record<string, unknown>[]) : [];
        raw.events = subject === undefined ? [] : events.filter((e) => e?.subject !== subject);
        return `notifier ${id}: unsubscribed from ${subject ?? 'every subject'}`;
      });
    });

  for (const [name, enabled] of [['enable', true], ['disable', false]] as const) {
    cmd.command(name)
      .description(`${name === 'enable' ? 'Enable' : 'Disable'} a notifier (from the next controller start)`)
      .argument('<id>', 'notifier id')
      .action((id: string) => edit(id, (raw) => {
        raw.enabled = enabled;
        return `notifier ${id} ${name}d`;
      }));
  }

  cmd.command('destroy')
    .description('Delete a notifier')
    .argument('<id>', 'notifier id')
    .action(async (id: string) => {
      const c = await ctx();
      await c.files.remove(id);
      io.out(`notifier ${id} destroyed; ${APPLY}\n`);
    });

  // an error of the command line itself (an unknown command or option) is one line, with the closest name and where the
  // usage is, not the whole help (the commands' own usage errors, made before this, still show the command's short help)
  cmd.showHelpAfterError(false).configureOutput({
    outputError: (s, write) => write(`${s.trimEnd().replace(/\n\(Did you mean (.*)\?\)$/, ' (did you mean $1?)').replace(/\.$/, '')}; see ${cmd.name()} --help\n`),
  });
  cmd.on('command:*', (operands: string[]) => {
    const near = suggest(operands[0], cmd.commands.map((c) => c.name()));
    cmd.error(`error: unknown command '${operands[0]}'${near ? ` (did you mean ${near}?)` : ''}`, { exitCode: ExitCodes.usage, code: 'commander.unknownCommand' });
  });
  cmd.addHelpText('after', () => typesHelp(catalogue));
  return cmd;
}

/** The help of the common settings and of the types this controller has (built-in and drop-in), each from its schema. */
function typesHelp(catalogue: TypeCatalogue): string {
  const types = [...new Set(catalogue.types.values())];
  const common = [
    ...Object.entries(FileFields).map(([name, d]) => `  ${name}: ${d}`),
    ...Object.entries(CommonSettings).map(([name, s]) => `  ${describeSetting(name, s)}`),
  ];
  return `\nSettings of every notifier file (\`set\` takes all but id, type and events):\n${common.join('\n')}\n`
    + `\nNotifier types (settings a notifier file and \`set\` take, besides the common ones):\n${types.map(typeHelp).join('\n')}\n`;
}

/** The controller directory the arguments name (-d / --dir), read before they are parsed: the help lists its types. */
function dirOf(argv: string[]): string {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if ((a === '-d' || a === '--dir') && i + 1 < argv.length) return argv[i + 1];
    if (a.startsWith('--dir=')) return a.slice('--dir='.length);
    if (a.startsWith('-d') && a.length > 2 && !a.startsWith('--')) return a.slice(2);
  }
  return process.cwd();
}

/** Run the command line; resolves with the exit code. */
export async function runNotifierCli(argv: string[], invokedAs: string | undefined, io: Io): Promise<number> {
  const cmd = program(io, productOf(invokedAs), await loadTypes(dirOf(argv)));
  try {
    await cmd.parseAsync(argv, { from: 'user' });
    return ExitCodes.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // help and version end well; every other parse failure is a usage error (commander already said why)
      return err.exitCode === 0 ? ExitCodes.ok : ExitCodes.usage;
    }
    if (err instanceof ConfigError) {
      io.err(configErrorText(err, 'notifier command not run'));
      return ExitCodes.config;
    }
    io.err(`error: ${err instanceof CliError ? err.message : describe(err)}\n`);
    return ExitCodes.failed;
  }
}
