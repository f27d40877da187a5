import type { ResolvedKey } from '../../core/auth/keys';
import { permits, type Permission } from '../../core/functions';

/** One method of the OpenRPC document (rpc.discover), as far as tools need it. */
interface Method {
  name: string;
  description: string;
  params: { name: string; required: boolean; schema: Record<string, unknown>; description: string }[];
  result: { description: string };
  'x-permission': Permission;
  'x-changes': boolean;
}

/** An MCP tool, and what decides who sees it. */
export interface Tool {
  /** what tools/list shows */
  shown: {
    name: string;
    description: string;
    inputSchema: { type: 'object'; properties: Record<string, unknown>; required?: string[]; additionalProperties: false };
    annotations: { readOnlyHint: boolean };
  };
  permission: Permission;
  changes: boolean;
}

/**
 * The tools of an OpenRPC document: one per function that needs a key
 * (`none` ones are left out: rpc.discover is what tools/list says, login
 * hands out what the bearer already is). The input schema is the
 * document's parameters, the key parameter `k` left out: the key is the
 * bearer.
 */
function toolsOf(doc: Record<string, unknown>): Map<string, Tool> {
  const tools = new Map<string, Tool>();
  for (const m of doc.methods as Method[]) {
    if (m['x-permission'] === 'none') continue;
    const params = m.params.filter((p) => p.name !== 'k');
    const required = params.filter((p) => p.required).map((p) => p.name);
    tools.set(m.name, {
      shown: {
        name: m.name,
        description: m.result.description ? `${m.description} Answer: ${m.result.description}.` : m.description,
        inputSchema: {
          type: 'object',
          properties: Object.fromEntries(params.map((p) => [p.name, { ...p.schema, description: p.description }])),
          ...(required.length ? { required } : {}),
          additionalProperties: false,
        },
        annotations: { readOnlyHint: !m['x-changes'] },
      },
      permission: m['x-permission'],
      changes: m['x-changes'],
    });
  }
  return tools;
}

/** The tools made of each document: made again only once a function came or went (the registry then makes a new document). */
const made = new WeakMap<Record<string, unknown>, Map<string, Tool>>();

export function toolsFor(doc: Record<string, unknown>): Map<string, Tool> {
  let tools = made.get(doc);
  if (!tools) made.set(doc, (tools = toolsOf(doc)));
  return tools;
}

/**
 * Whether a caller may run a tool, as the dispatcher will judge the call:
 * its key's permission, a read-only token (no function beyond `any`, none
 * that changes something: restricted() of core/functions.ts), and the
 * key's `mcp`: `write` or only functions that change nothing.
 */
export function mayRun(who: ResolvedKey, tool: Tool): boolean {
  if (!permits(who.key, tool.permission)) return false;
  if (tool.changes && who.key.mcp !== 'write') return false;
  return !(who.readonly && (tool.changes || tool.permission !== 'any'));
}
