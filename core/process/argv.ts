import { parse } from 'shell-quote';

/** A command line asks for something only a shell could do; the message says what to quote. */
export class CommandLineError extends Error {}

/**
 * What to do with the two things a shell does beyond splitting words that a
 * command line may still contain (operators are always refused).
 */
export interface SplitPolicy {
  /**
   * `$name`: `literal` passes the text `$name` on (config lines, which EVA ICS
   * users wrote for a shell, keep working where a shell would have expanded
   * nothing useful); `refuse` refuses it (API input: the caller must say what
   * they mean).
   */
  variables: 'literal' | 'refuse';
  /** an unquoted `#`: `end` ends the line there as a shell comment, `refuse` refuses it */
  comments: 'end' | 'refuse';
}

/** The two kinds of command lines the controller runs. */
export const SplitPolicies = {
  /** written by the operator in a config file, for the shell EVA ICS ran it with (exec_before_save) */
  configLine: { variables: 'literal', comments: 'end' },
  /** sent through the API by a caller (the arguments of cmd) */
  apiInput: { variables: 'refuse', comments: 'refuse' },
} as const satisfies Record<string, SplitPolicy>;

/**
 * The line with the two places where shell-quote reads differently from a
 * shell made plain, before it parses: a quote left open (a shell refuses
 * the line; shell-quote would silently close it, changing the words) is
 * refused, and a `#` inside a word (a shell starts a comment only at the
 * start of a word: `a#b` is one word) is escaped. A backslash at the very
 * end stays a literal backslash, as a shell keeps it.
 */
function asShellReads(line: string): string {
  let out = '';
  let quote = '';
  // inside a word: a # here is text (a word is ended only by unquoted, unescaped white space)
  let inWord = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote === "'") {
      if (c === "'") quote = '';
      out += c;
      continue;
    }
    if (c === '\\') {
      // escapes the next character, in double quotes too (so \" does not end them)
      out += i + 1 < line.length ? c + line[++i] : '\\\\';
    } else if (quote === '"') {
      if (c === '"') quote = '';
      out += c;
    } else if (/\s/.test(c)) {
      out += c;
      inWord = false;
      continue;
    } else if (c === "'" || c === '"') {
      quote = c;
      out += c;
    } else {
      out += c === '#' && inWord ? '\\#' : c;
    }
    inWord = true;
  }
  if (quote) throw new CommandLineError(`a ${quote === '"' ? 'double' : 'single'} quote is not closed`);
  return out;
}

/**
 * Split a command line into argv words the way a shell splits words: spaces
 * separate, single and double quotes and backslashes group. Nothing we run
 * ever goes through a shell, so nothing a shell would do beyond splitting
 * happens: operators (|, >, ;, &&, &, parentheses) are refused rather than
 * passed as words the writer did not mean, and an unquoted glob such as
 * `*.log` is the literal word, as a shell passes it when nothing matches.
 * Throws CommandLineError.
 */
export function splitArgv(line: string, policy: SplitPolicy): string[] {
  if (line.includes('\0')) throw new CommandLineError('NUL characters cannot be passed to a process');
  const variables: string[] = [];
  const tokens = parse(asShellReads(line), (name: string) => {
    variables.push(name);
    return `$${name}`;
  });
  if (variables.length && policy.variables === 'refuse') {
    throw new CommandLineError(`$${variables[0]} would need a shell to expand; put it in single quotes to pass it as text`);
  }
  const words: string[] = [];
  for (const tok of tokens) {
    if (typeof tok === 'string') {
      words.push(tok);
    } else if ('comment' in tok) {
      if (policy.comments === 'end') break;
      throw new CommandLineError('an unquoted # starts a shell comment; quote it to pass it as text');
    } else if (tok.op === 'glob') {
      words.push((tok as { pattern: string }).pattern);
    } else {
      throw new CommandLineError(`unquoted shell operator ${tok.op}; quote it to pass it as text (no shell runs)`);
    }
  }
  return words;
}
