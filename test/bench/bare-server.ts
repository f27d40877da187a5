import http from 'node:http';

/**
 * The reference server of the API benchmark: bare node:http answering fixed
 * bytes with the headers the controller sends, as cheaply as node:http
 * allows — the header list made once, the body in the same write as the
 * head (as latin1 text, which carries any bytes), the request body read and
 * dropped. argv: <content-type> <base64 response body> [old]; `old`: the
 * earlier reference (headers as an object, the body's chunks kept, the
 * answer a Buffer written after the head), for comparison.
 */
const [type, b64, mode] = process.argv.slice(2);
const bytes = Buffer.from(b64, 'base64');
const body = bytes.toString('latin1');
const head = [
  'Cache-Control', 'no-cache, no-store, must-revalidate', 'Expires', '0', 'Pragma', 'no-cache',
  'Content-Type', type, 'Content-Length', String(bytes.length),
];
const drop = () => undefined;
const headers = {
  'Cache-Control': 'no-cache, no-store, must-revalidate', Expires: '0', Pragma: 'no-cache', 'Content-Type': type, 'Content-Length': bytes.length,
};
const server = http.createServer(mode === 'old'
  ? (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(200, headers);
      res.end(bytes);
    });
  }
  : (req, res) => {
    req.on('data', drop);
    req.on('end', () => {
      res.writeHead(200, head);
      res.end(body, 'latin1');
    });
  });
server.listen(0, '127.0.0.1', () => process.stdout.write(`PORT ${(server.address() as any).port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
