/**
 * The floor server in its own process, so it gets its own event loop and core exactly as the
 * runtime does: a floor sharing the load generator's thread would look slower than it is and
 * flatter every ratio. The parent talks to it over the fork IPC channel.
 *
 * Child side: `node dist/bench/floor-process.js <socketPath>` (started by startFloorProcess).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../src/tuning/node-flags.js';
import { unixEndpoint } from '../src/cri/endpoint.js';
import { startFloorServer } from './floor-server.js';

type ToChild = { kind: 'setResponse'; id: number; method: string; response: object };
type ToParent = { kind: 'ready' } | { kind: 'ack'; id: number } | { kind: 'error'; message: string };

export interface FloorProcess {
  readonly endpoint: string;
  readonly pid: number;
  setResponse(method: string, response: object): Promise<void>;
  close(): Promise<void>;
}

export async function startFloorProcess(socketPath: string, readyTimeoutMs = 10000): Promise<FloorProcess> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), [socketPath], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    // The runtime's flags (src/tuning/node-flags.ts), so the two servers differ in their handlers only.
    execArgv: [...NODE_FLAGS],
    serialization: 'advanced',
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pending = new Map<number, () => void>();
  let nextId = 0;
  let timer: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`floor server did not start within ${readyTimeoutMs} ms`)), readyTimeoutMs);
    child.on('message', (m: ToParent) => {
      if (m.kind === 'ready') resolve();
      else if (m.kind === 'ack') pending.get(m.id)?.();
      else if (m.kind === 'error') reject(new Error(`floor server: ${m.message}`));
    });
    child.once('exit', (code) => reject(new Error(`floor server exited with code ${code} before it was ready`)));
  }).catch(async (err: unknown) => {
    child.kill('SIGKILL');
    await exited;
    throw err;
  }).finally(() => clearTimeout(timer));

  return {
    endpoint: unixEndpoint(socketPath),
    pid: child.pid ?? -1,
    setResponse(method, response) {
      const id = nextId++;
      return new Promise<void>((resolve) => {
        pending.set(id, () => {
          pending.delete(id);
          resolve();
        });
        child.send({ kind: 'setResponse', id, method, response } satisfies ToChild);
      });
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 3000);
        await exited;
        clearTimeout(killer);
      }
    },
  };
}

async function childMain(socketPath: string): Promise<void> {
  const send = (m: ToParent): void => {
    process.send?.(m);
  };
  try {
    const floor = await startFloorServer(socketPath);
    const shutdown = (): void => {
      void floor.close().then(() => process.exit(0));
    };
    process.once('SIGTERM', shutdown);
    // The parent went away: nothing will ever stop us otherwise.
    process.once('disconnect', shutdown);
    process.on('message', (m: ToChild) => {
      if (m.kind === 'setResponse') {
        floor.setResponse(m.method, m.response);
        send({ kind: 'ack', id: m.id });
      }
    });
    send({ kind: 'ready' });
  } catch (err) {
    send({ kind: 'error', message: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.send !== undefined) {
  const socketPath = process.argv[2];
  if (!socketPath) {
    process.stderr.write('usage: floor-process.js <socket path>\n');
    process.exit(2);
  }
  void childMain(socketPath);
}
