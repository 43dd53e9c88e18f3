// `kubectl port-forward` as a user runs it, for the node-mode suites: started, its local port
// read from what it prints, and killed (and waited for) when the callback is done.
import { spawn } from 'node:child_process';
import { get as httpGet } from 'node:http';
import { controlPlaneTools, type ControlPlane } from './control-plane.js';

/** Runs `kubectl port-forward -n NS TARGET :PORT` while `use` runs; `use` gets the local port. */
export async function withPortForward<T>(cp: ControlPlane, target: string, port: number, use: (localPort: number) => Promise<T>, namespace = 'default'): Promise<T> {
  const forward = spawn(controlPlaneTools().paths.kubectl, ['--kubeconfig', cp.adminKubeconfig, 'port-forward', '-n', namespace, target, `:${port}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const localPort = await new Promise<number>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`kubectl port-forward said nothing useful: ${out}`)), 30_000);
      const onData = (c: Buffer): void => {
        out += c.toString();
        const m = new RegExp(`Forwarding from 127\\.0\\.0\\.1:(\\d+) -> ${port}`).exec(out);
        if (m) { clearTimeout(timer); resolve(Number(m[1])); }
      };
      forward.stdout.on('data', onData);
      forward.stderr.on('data', onData);
      forward.once('exit', (code) => { clearTimeout(timer); reject(new Error(`kubectl port-forward exited (${code}): ${out}`)); });
    });
    return await use(localPort);
  } finally {
    forward.kill('SIGKILL');
    await new Promise((r) => (forward.exitCode !== null || forward.signalCode !== null ? r(undefined) : forward.once('exit', r)));
  }
}

/** GET http://127.0.0.1:PORT/PATH on a fresh connection: the status, the Server header and the body. */
export function getLocal(port: number, path: string): Promise<{ status: number; server: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    httpGet({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => { body += c.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, server: res.headers['server'] as string | undefined, body }));
    }).on('error', reject);
  });
}
