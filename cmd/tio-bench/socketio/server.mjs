// The socket.io server of tio-bench's peer comparison. It speaks the same
// lines as tio-bench's Go fan-out server child (peer_server.go): a hello
// line {"url"} on stdout, then one reply line per command line on stdin
// (members, round, cpu), and it exits when stdin closes. Every socket joins
// the room "all"; "echo" is answered through its acknowledgement, "ping" is
// counted and "sync" acknowledges the count so far.
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { Server } from 'socket.io';

const room = 'all';
const http = createServer();
const io = new Server(http, { transports: ['websocket'], serveClient: false, maxHttpBufferSize: 1 << 20 });
let pings = 0;

io.on('connection', (socket) => {
  socket.join(room);
  socket.on('echo', (req, ack) => ack(req));
  socket.on('ping', () => { pings++; });
  socket.on('sync', (ack) => ack(pings));
});

const reply = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const nowNs = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
const cpuMicros = () => { const u = process.cpuUsage(); return u.user + u.system; };

// stamped is a JSON text of size bytes carrying the send time, as the Go
// side's stamped().
function stamped(size) {
  const head = `{"t":${nowNs()},"p":"`;
  return head + 'x'.repeat(Math.max(size - head.length - 2, 0)) + '"}';
}

let roundCPU = 0;

async function handle(c) {
  switch (c.op) {
    case 'members': {
      const deadline = Date.now() + 60_000;
      const joined = () => io.of('/').adapter.rooms.get(room)?.size ?? 0;
      while (joined() < c.members) {
        if (Date.now() > deadline) return { error: `${joined()} of ${c.members} members joined` };
        await sleep(1);
      }
      return { members: joined() };
    }
    case 'round': {
      roundCPU = cpuMicros();
      const intervalMs = (c.interval_ns ?? 0) / 1e6;
      const start = performance.now();
      for (let i = 0; i < c.count; i++) {
        if (intervalMs > 0) {
          const d = start + i * intervalMs - performance.now();
          if (d > 0) await sleep(d);
        }
        io.to(room).emit('said', stamped(c.size));
      }
      return { sent: c.count };
    }
    case 'cpu':
      return { cpu_us: cpuMicros() - roundCPU };
    default:
      return { error: `unknown op ${JSON.stringify(c.op)}` };
  }
}

http.listen(0, '127.0.0.1', () => {
  reply({ url: `http://127.0.0.1:${http.address().port}` });
  const lines = createInterface({ input: process.stdin });
  let queue = Promise.resolve();
  lines.on('line', (line) => {
    queue = queue.then(async () => reply(await handle(JSON.parse(line))));
  });
  lines.on('close', () => queue.then(() => { io.close(); process.exit(0); }));
});
