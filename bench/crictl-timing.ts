/**
 * Wall time of the real crictl (Go client, like the kubelet's) against an endpoint: how long
 * `crictl ps -a -q` takes over N live containers, next to `crictl version` (process start plus
 * one small RPC) as the baseline to subtract. Shows what a Go client sees of a list, without the
 * cost of decoding it in JavaScript.
 */
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { summarize, type LatencySummary } from './stats.js';

export interface CrictlTiming {
  command: string;
  summary: LatencySummary;
}

/** A crictl config naming the endpoint, so the machine's /etc/crictl.yaml plays no part. */
export function writeCrictlConfig(dir: string, endpoint: string): string {
  const path = join(dir, `crictl-${endpoint.replace(/[^a-z0-9]+/gi, '_')}.yaml`);
  writeFileSync(path, `runtime-endpoint: ${endpoint}\nimage-endpoint: ${endpoint}\ntimeout: 60\n`);
  return path;
}

function runOnce(crictl: string, args: string[], timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(crictl, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (c: string) => {
      if (stderr.length < 2000) stderr += c;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      const ms = performance.now() - started;
      if (code === 0) resolve(ms);
      else reject(new Error(`crictl ${args.join(' ')} exited ${code ?? signal}: ${stderr.trim().split('\n').pop() ?? ''}`));
    });
  });
}

/** Runs `crictl --config CONFIG ARGS…` `samples` times in a row; throws on the first failure. */
export async function timeCrictl(crictl: string, config: string, args: string[], samples: number, timeoutMs = 60000): Promise<CrictlTiming> {
  if (!existsSync(crictl)) throw new Error(`crictl not found at ${crictl}`);
  const full = ['--config', config, ...args];
  const times: number[] = [];
  for (let i = 0; i < samples; i++) times.push(await runOnce(crictl, full, timeoutMs));
  return { command: `crictl ${args.join(' ')}`, summary: summarize(times) };
}
