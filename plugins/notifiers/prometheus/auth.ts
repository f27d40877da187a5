import crypto from 'node:crypto';

const digest = (s: string) => crypto.createHash('sha256').update(s, 'utf8').digest();
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Basic credentials a scrape must bring, checked as 3.3 did: scheme `basic`
 * in any case, the user name trimmed, the password as it is; anything else,
 * no header included, is refused (3.3 answered 403, never 401). Both are
 * compared in constant time, whatever the first one gave.
 */
export class BasicCredentials {
  private readonly user: Buffer;
  private readonly password: Buffer;

  constructor(user: string, password: string) {
    this.user = digest(user);
    this.password = digest(password);
  }

  /** Whether the Authorization header carries these credentials. */
  accepts(header: string | undefined): boolean {
    if (!header) return false;
    const space = header.indexOf(' ');
    if (space < 0 || header.slice(0, space).toLowerCase() !== 'basic') return false;
    let text: string;
    try {
      text = utf8.decode(Buffer.from(header.slice(space + 1), 'base64'));
    } catch {
      return false;
    }
    const colon = text.indexOf(':');
    if (colon < 0) return false;
    const userOk = crypto.timingSafeEqual(digest(text.slice(0, colon).trim()), this.user);
    const passwordOk = crypto.timingSafeEqual(digest(text.slice(colon + 1)), this.password);
    return userOk && passwordOk;
  }
}
