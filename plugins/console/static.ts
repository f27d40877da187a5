import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type http from 'node:http';

const Types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/**
 * The page may run only its own files: no inline script or style, no other
 * origin, no framing; the API and the stream are on the same origin.
 */
export const SecurityHeaders = {
  'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    + "connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-cache',
};

export interface Asset { type: string; body: Buffer; gzip: Buffer; etag: string }

/** Read a fixed set of files into memory once: url path -> file. Nothing else is ever read, so no path leaves them. */
export function loadAssets(files: Record<string, string>): Map<string, Asset> {
  const out = new Map<string, Asset>();
  for (const [url, file] of Object.entries(files)) {
    const body = fs.readFileSync(file);
    const gzip = zlib.gzipSync(body, { level: 9 });
    const etag = `"${body.length.toString(16)}-${zlib.crc32(body).toString(16)}"`;
    out.set(url, { type: Types[path.extname(file)] ?? 'application/octet-stream', body, gzip, etag });
  }
  return out;
}

/** Every file of a folder (not below), by url prefix + name. */
export function folderFiles(dir: string, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) if (e.isFile()) out[prefix + e.name] = path.join(dir, e.name);
  return out;
}

/** Answer GET/HEAD for a loaded asset (gzip when the client takes it, 304 on a matching ETag); false otherwise. */
export function serveAsset(assets: Map<string, Asset>, req: http.IncomingMessage, res: http.ServerResponse): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const url = new URL(req.url ?? '/', 'http://x').pathname;
  const a = assets.get(url === '/' ? '/index.html' : url);
  if (!a) return false;
  const headers: Record<string, string | number> = { ...SecurityHeaders, 'Content-Type': a.type, ETag: a.etag, Vary: 'Accept-Encoding' };
  if (req.headers['if-none-match'] === a.etag) {
    res.writeHead(304, headers);
    res.end();
    return true;
  }
  const gz = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const body = gz ? a.gzip : a.body;
  if (gz) headers['Content-Encoding'] = 'gzip';
  headers['Content-Length'] = body.length;
  res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
}
