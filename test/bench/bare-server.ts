import http from 'node:http';

/**
 * The reference server of the API benchmark: bare node:http that reads the
 * request body and answers fixed bytes with the same headers the controller
 * sends. argv: <content-type> <base64 response body>.
 */
const [type, b64] = process.argv.slice(2);
const body = Buffer.from(b64, 'base64');
const headers = {
  'Cache-Control': 'no-cache, no-store, must-revalidate', Expires: '0', Pragma: 'no-cache',
  'Content-Type': type, 'Content-Length': body.length,
};
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    res.writeHead(200, headers);
    res.end(body);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`PORT ${(server.address() as any).port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
