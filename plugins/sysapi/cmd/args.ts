import { parse } from 'shell-quote';
import { invalidParams } from '../../../core/errors';

/**
 * Split the `a` parameter of cmd into argv words the way a shell splits words:
 * spaces separate, single and double quotes and backslashes group. No shell
 * ever runs, so nothing a shell would do beyond splitting happens: where the
 * text asks for more (a `$variable`, a pipe or redirection, a `#` comment) the
 * call is refused with a message saying what to quote, rather than passing
 * something the caller did not mean. An unquoted glob such as `*.log` is
 * passed as the literal word, as a shell does when nothing matches.
 */
export function splitArgs(a: string | undefined): string[] {
  if (a === undefined) return [];
  if (a.includes('\0')) throw invalidParams('parameter a: NUL characters cannot be passed to a process');
  const variables: string[] = [];
  const tokens = parse(a, (name: string) => {
    variables.push(name);
    return '';
  });
  if (variables.length) {
    throw invalidParams(`parameter a: $${variables[0]} would need a shell to expand; put it in single quotes to pass it as text`);
  }
  return tokens.map((tok) => {
    if (typeof tok === 'string') return tok;
    if ('comment' in tok) throw invalidParams('parameter a: an unquoted # starts a shell comment; quote it to pass it as text');
    if (tok.op === 'glob') return (tok as { pattern: string }).pattern;
    throw invalidParams(`parameter a: unquoted shell operator ${tok.op}; quote it to pass it as text`);
  });
}
