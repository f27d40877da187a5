import fs from 'node:fs';
import path from 'node:path';
import { Keys, makeDir, startController } from '../helpers/controller';
import type { Product } from '../../core/defaults';

/**
 * The function reference, plugins/FUNCTIONS.md, rendered from what
 * `rpc.discover` answers (the OpenRPC document the registry makes from the
 * declarations): nobody writes it by hand, and functions.test.ts fails when
 * the committed file is not what the declarations give.
 *
 *   node dist/test/docs/functions.js           print it
 *   node dist/test/docs/functions.js --write   write plugins/FUNCTIONS.md
 */

export const ROOT = path.resolve(__dirname, '..', '..', '..');
export const FILE = path.join(ROOT, 'plugins', 'FUNCTIONS.md');
export const REGENERATE = 'npm run build && node dist/test/docs/functions.js --write';
const PRODUCTS: Product[] = ['uc', 'lm', 'sfa'];

export interface Param { name: string; required?: boolean; schema: Record<string, unknown>; description?: string }
export interface Method {
  name: string;
  description: string;
  params: Param[];
  result: { description?: string };
  'x-permission': string;
  'x-aliases': string[];
  'x-api': 'sys' | 'product';
  'x-fenced'?: boolean;
  /** may change something (read-only tokens, MCP read keys): older documents lack it */
  'x-changes'?: boolean;
}
export interface Discovery { info: { title: string; version: string }; methods: Method[] }

/** What `rpc.discover` answers on a fresh controller of each product (no drop-ins, no core scripts). */
export async function discoverAll(): Promise<Record<Product, Discovery>> {
  const out = {} as Record<Product, Discovery>;
  for (const product of PRODUCTS) {
    const dir = makeDir(undefined, { product });
    try {
      const running = await startController(undefined, { dir, product });
      try {
        out[product] = await running.client.ok('rpc.discover', { k: Keys.master }) as Discovery;
      } finally {
        await running.stop();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  return out;
}

/** The declaration's parameter type, read back from the JSON schema core/params.ts makes of it. */
export function typeOf(schema: Record<string, unknown>): string {
  const s = JSON.stringify(schema);
  switch (s) {
    case '{}': return 'any';
    case '{"type":"string"}': return 'string';
    case '{"type":"integer"}': return 'integer';
    case '{"type":"number"}': return 'number';
    case '{"type":"boolean"}': return 'boolean';
    case '{"oneOf":[{"type":"array","items":{"type":"string"}},{"type":"string"}]}': return 'list';
    default:
      if (schema.type === 'number' && schema.minimum === 0 && typeof schema.maximum === 'number') return `seconds (0–${schema.maximum})`;
      if (Array.isArray(schema.enum) && Object.keys(schema).length === 1) return `one of ${(schema.enum as string[]).join(', ')}`;
      if ((schema.type === 'integer' || schema.type === 'number') && Object.keys(schema).every((k) => ['type', 'minimum', 'maximum'].includes(k))) {
        const { minimum: min, maximum: max } = schema as { minimum?: number; maximum?: number };
        return `${schema.type} (${min !== undefined && max !== undefined ? `${min}–${max}` : min !== undefined ? `at least ${min}` : `at most ${max}`})`;
      }
      return `\`${s}\``;
  }
}

/** Text as one table cell or line of markdown: nothing in it becomes markup, a tag or a column. */
export function cell(text: string | undefined): string {
  return (text ?? '').replace(/\s*\n\s*/g, ' ').replace(/([\\|*`[\]])/g, '\\$1').replace(/(?<!\w)_|_(?!\w)/g, '\\_')
    .replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function where(m: Method): string {
  return m['x-api'] === 'product' ? `/jrpc, /<product>-api/${m.name}` : `/jrpc, /sys-api/${m.name}`;
}

function summary(methods: Method[], products: (m: Method) => string): string[] {
  const lines = ['| function | aliases | permission | what |', '| --- | --- | --- | --- |'];
  for (const m of methods) {
    const aliases = m['x-aliases'].map((a) => `\`${a}\``).join(', ');
    lines.push(`| [\`${m.name}\`](#${slug(m.name)}) | ${aliases} | ${m['x-permission']} | ${cell(m.description)}${products(m)} |`);
  }
  return lines;
}

/** GitHub's anchor of a heading that is one code span: lower case, punctuation but - and _ dropped. */
function slug(name: string): string {
  return name.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replace(/ /g, '-');
}

/** The reference, from the discover answers of every product. */
export function render(all: Record<Product, Discovery>): string {
  const byName = new Map<string, { m: Method; products: Product[] }>();
  for (const product of PRODUCTS) {
    for (const m of all[product].methods) {
      const e = byName.get(m.name);
      if (e) e.products.push(product);
      else byName.set(m.name, { m, products: [product] });
    }
  }
  const same = [...byName.values()].every((e) => e.products.length === PRODUCTS.length);
  const products = (m: Method) => (same ? '' : ` (${byName.get(m.name)!.products.join(', ')})`);
  const sorted = [...byName.values()].map((e) => e.m).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const sys = sorted.filter((m) => m['x-api'] !== 'product');
  const items = sorted.filter((m) => m['x-api'] === 'product');

  const out: string[] = [
    '# Functions',
    '',
    `<!-- Generated by test/docs/functions.ts from rpc.discover; do not edit. Regenerate: ${REGENERATE} -->`,
    '',
    'Every function the built-in plugins declare, as `rpc.discover` describes it',
    `(API version ${all.uc.info.version}) on a controller without drop-in plugins or core`,
    'scripts; the functions of those (a core script\'s `cs_<topic>`) are in the',
    '`rpc.discover` answer of the controller that runs them.',
    same ? `${PRODUCTS.join(', ')} declare the same functions.` : 'A function not every product declares names the products that do.',
    '',
    'Every function is on JSON RPC at `/jrpc` under its name or an alias; a',
    'sys-api function is also at `/sys-api/<name>`, an item function at',
    '`/<product>-api/<name>` (GET or POST). `k` is the API key or a login token',
    '(or the `X-Auth-Key` header). Permission: `none` needs no key, `any` any',
    'valid key, `master` the master key, `sysfunc` a sysfunc or master key, `cmd`,',
    '`lock`, `device` a key whose `allow` has it. Types: `seconds` is a time in',
    'seconds, `list` a list of strings or one comma-separated string, `any` any',
    'JSON value. "Changes something" (the declaration\'s `changes`) decides what a',
    'read-only token and an MCP key without `mcp = write` may call.',
    'A function marked "on a failover standby: refused" changes items, cvars or',
    'locks, or runs a unit action: a standby controller (`[cluster] failover`)',
    'answers it with JSON RPC code 5, HTTP 503 and a message that says `standby`',
    '(plugins/cluster/README.md, Failover).',
    '',
    '## sys-api functions',
    '',
    ...summary(sys, products),
    '',
    '## Item functions',
    '',
    ...summary(items, products),
    '',
    '## Parameters and answers',
    '',
  ];
  for (const m of sorted) {
    out.push(`### \`${m.name}\``, '', cell(m.description), '');
    out.push(`- at: \`${where(m)}\``);
    if (m['x-aliases'].length) out.push(`- aliases: ${m['x-aliases'].map((a) => `\`${a}\``).join(', ')}`);
    out.push(`- permission: ${m['x-permission']}`);
    if (m['x-fenced']) out.push('- on a failover standby: refused, 5 / 503 (`standby`)');
    if (m['x-changes'] !== undefined) out.push(`- changes something: ${m['x-changes'] ? 'yes' : 'no'}`);
    if (!same) out.push(`- products: ${byName.get(m.name)!.products.join(', ')}`);
    out.push(`- answer: ${cell(m.result.description)}`, '');
    out.push('| parameter | type | required | description |', '| --- | --- | --- | --- |');
    for (const p of m.params) out.push(`| \`${p.name}\` | ${typeOf(p.schema)} | ${p.required ? 'yes' : 'no'} | ${cell(p.description)} |`);
    out.push('');
  }
  return `${out.join('\n').trimEnd()}\n`;
}

if (require.main === module) {
  void (async () => {
    const text = render(await discoverAll());
    if (process.argv.includes('--write')) {
      fs.writeFileSync(FILE, text);
      process.stdout.write(`${path.relative(ROOT, FILE)} written (${text.split('\n').length} lines)\n`);
    } else {
      process.stdout.write(text);
    }
    process.exit(0);
  })().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
