// HTTPS requests to a kubelet server, as a client of the node's daemon endpoint would send them.
import { request } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { PeerCertificate, TLSSocket } from 'node:tls';

export interface KubeletResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly peer: PeerCertificate;
}

export interface KubeletRequestOptions {
  readonly method?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly headers?: Record<string, string>;
  readonly timeoutMs?: number;
}

export function kubeletRequest(port: number, path: string, options: KubeletRequestOptions = {}): Promise<KubeletResponse> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, path, method: options.method ?? 'GET', rejectUnauthorized: false, agent: false,
      ...(options.cert !== undefined ? { cert: options.cert, key: options.key } : {}),
      headers: options.headers ?? {},
      timeout: options.timeoutMs ?? 10_000,
    }, (res) => {
      const peer = (res.socket as TLSSocket).getPeerCertificate(false);
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString(), peer }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** Reads a streaming response until `until` holds for the text so far, then closes it. */
export function kubeletStream(port: number, path: string, options: KubeletRequestOptions, until: (text: string) => boolean): Promise<{ status: number; body: string; ended: boolean }> {
  return new Promise((resolve, reject) => {
    let body = '';
    let done = false;
    const req = request({
      host: '127.0.0.1', port, path, method: 'GET', rejectUnauthorized: false, agent: false,
      ...(options.cert !== undefined ? { cert: options.cert, key: options.key } : {}),
      headers: options.headers ?? {},
    }, (res) => {
      res.on('data', (c: Buffer) => {
        body += c.toString();
        if (!done && until(body)) {
          done = true;
          resolve({ status: res.statusCode ?? 0, body, ended: false });
          req.destroy();
        }
      });
      res.on('end', () => {
        if (!done) {
          done = true;
          resolve({ status: res.statusCode ?? 0, body, ended: true });
        }
      });
      res.on('error', () => {});
    });
    const timer = setTimeout(() => req.destroy(new Error(`${path}: no match within ${options.timeoutMs ?? 15_000} ms; got ${JSON.stringify(body)}`)), options.timeoutMs ?? 15_000);
    req.on('close', () => clearTimeout(timer));
    req.on('error', (err) => { if (!done) { done = true; reject(err); } });
    req.end();
  });
}

/** A request that asks for an upgrade: the 101 (its socket ended at once) or the plain response. */
export function kubeletUpgrade(port: number, path: string, options: KubeletRequestOptions = {}): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, path, method: options.method ?? 'POST', rejectUnauthorized: false, agent: false,
      ...(options.cert !== undefined ? { cert: options.cert, key: options.key } : {}),
      headers: options.headers ?? {},
      timeout: options.timeoutMs ?? 10_000,
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' });
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('timeout', () => req.destroy(new Error(`${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}
