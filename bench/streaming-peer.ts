/**
 * The two ends of the port-forward throughput runs of bench/streaming.ts, each in a process of
 * its own so that neither takes the runtime's thread (the runtime's cost is what is measured):
 *
 *   node dist/bench/streaming-peer.js serve IP PORT BYTES    a listener sending BYTES to each connection
 *   node dist/bench/streaming-peer.js read-tcp HOST PORT     reads one connection to its end
 *   node dist/bench/streaming-peer.js read-ws URL            reads the data channel of a WebSocket
 *                                                           port-forward (the kubelet's v4 channels)
 *
 * `serve` prints `listening` once bound; the readers print `{"bytes":N,"seconds":S}` and exit.
 * Times start at the connect call and end with the last byte.
 */
import { createServer, connect } from 'node:net';
import { WebSocket } from 'ws';

function report(bytes: number, started: bigint): void {
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  process.stdout.write(`${JSON.stringify({ bytes, seconds })}\n`);
}

function serve(ip: string, port: number, total: number): void {
  const chunk = Buffer.alloc(256 * 1024, 120);
  const server = createServer((socket) => {
    let sent = 0;
    socket.on('error', () => socket.destroy());
    const pump = (): void => {
      while (sent < total) {
        sent += chunk.length;
        if (!socket.write(chunk)) {
          socket.once('drain', pump);
          return;
        }
      }
      socket.end();
    };
    pump();
  });
  server.listen(port, ip, () => process.stdout.write('listening\n'));
  process.on('SIGTERM', () => process.exit(0));
}

function readTcp(host: string, port: number): void {
  const started = process.hrtime.bigint();
  let bytes = 0;
  const socket = connect({ host, port });
  socket.on('data', (b: Buffer) => {
    bytes += b.length;
  });
  socket.on('end', () => report(bytes, started));
  socket.on('error', (err) => {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  });
}

function readWebSocket(url: string): void {
  const started = process.hrtime.bigint();
  let bytes = 0;
  let first = true;
  const ws = new WebSocket(url.replace(/^http/, 'ws'), ['v4.channel.k8s.io']);
  ws.on('message', (raw: Buffer) => {
    if (raw[0] !== 0) return;
    // The data channel's first message starts with its port (uint16).
    bytes += raw.length - (first ? 3 : 1);
    first = false;
  });
  ws.on('close', () => report(bytes, started));
  ws.on('error', (err) => {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  });
}

const [mode, a = '', b = '', c = ''] = process.argv.slice(2);
if (mode === 'serve') serve(a, Number(b), Number(c));
else if (mode === 'read-tcp') readTcp(a, Number(b));
else if (mode === 'read-ws') readWebSocket(a);
else {
  process.stderr.write('usage: streaming-peer serve IP PORT BYTES | read-tcp HOST PORT | read-ws URL\n');
  process.exit(2);
}
