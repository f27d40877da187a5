/** A command line cannot be split into words (a quote left open, a trailing backslash, a NUL). */
export class CommandLineError extends Error {}

const WHITESPACE = ' \t\r\n';

/**
 * Split a command line into argv words exactly as EVA ICS 3.3 did, with
 * Python's `shlex.split` in POSIX mode (comments off): white space separates
 * words; single quotes group literally; double quotes group, a backslash in
 * them escaping only `"` and `\`; outside quotes a backslash escapes any
 * character. Every other character (`$ ; | & > ( ) \` # *`) is plain text of
 * its word: nothing we run goes through a shell, so none of them can do what
 * a shell would do with it. Throws CommandLineError where shlex raises.
 */
export function splitArgv(line: string): string[] {
  if (line.includes('\0')) throw new CommandLineError('NUL characters cannot be passed to a process');
  const words: string[] = [];
  let word = '';
  // a word has begun: an empty pair of quotes makes an empty word
  let inWord = false;
  let quote = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote === "'") {
      if (c === "'") quote = '';
      else word += c;
    } else if (quote === '"') {
      if (c === '"') quote = '';
      else if (c === '\\' && (line[i + 1] === '"' || line[i + 1] === '\\')) word += line[++i];
      else word += c;
    } else if (c === '\\') {
      if (i + 1 >= line.length) throw new CommandLineError('a backslash at the end escapes nothing');
      word += line[++i];
      inWord = true;
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (WHITESPACE.includes(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote) throw new CommandLineError(`a ${quote === '"' ? 'double' : 'single'} quote is not closed`);
  if (inWord) words.push(word);
  return words;
}
