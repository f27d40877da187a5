import type { ExecutionContext } from 'ava';
import type { Client } from './controller';

/** The (JSON RPC code, HTTP status) pairs of the errors of core/README.md (Using the API) and core/errors.ts. */
export const Err = {
  notFound: { code: 1, status: 404 },
  denied: { code: 2, status: 403 },
  failed: { code: 10, status: 500 },
  invalid: { code: 11, status: 400 },
  busy: { code: 13, status: 409 },
} as const;

/** A call fails with the same error through JSON RPC and the direct API. */
export async function failsBoth(
  t: ExecutionContext, client: Client, fn: string, params: Record<string, unknown>, err: { code: number; status: number },
): Promise<void> {
  const rpc = await client.rpc(fn, params);
  t.is(rpc.error?.code, err.code, `${fn} over JSON RPC: ${JSON.stringify(rpc)}`);
  const direct = await client.post(fn, params);
  t.is(direct.status, err.status, `${fn} direct: ${JSON.stringify(direct.body)}`);
  t.is(direct.body.result, 'ERROR');
  t.is(typeof direct.body._error, 'string');
}
