/**
 * How the kubelet's server writes its answers (go-restful and net/http as server.go uses them):
 * plain-text errors, JSON bodies with metav1.Time, and a response on an upgraded socket.
 */
import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { grpcErrorString } from '../cri-errors.js';

/** A reply to a request that arrived as an upgrade: an HTTP response written on its socket. */
export function responseOnSocket(req: IncomingMessage, socket: Duplex): ServerResponse {
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket as Socket);
  res.on('finish', () => {
    res.detachSocket(socket as Socket);
    socket.end();
  });
  return res;
}

/** go-restful's WriteErrorString / http.Error: the text as it is, as text/plain. */
export function text(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.end(body);
    return;
  }
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff', ...headers });
  res.end(body);
}

/** metav1.Time in JSON: RFC3339 at second precision (a Date's own toJSON would add milliseconds). */
function timeReplacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const original = this[key];
  return original instanceof Date ? original.toISOString().replace(/\.\d{3}Z$/, 'Z') : value;
}

export function json(res: ServerResponse, body: unknown): void {
  const data = Buffer.from(JSON.stringify(body, timeReplacer));
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': data.length });
  res.end(data);
}

/** streaming.WriteError: NotFound → 404, ResourceExhausted → 429, anything else 500; the error's text. */
export function streamingError(res: ServerResponse, err: unknown): void {
  const code = (err as { code?: unknown }).code;
  const status = code === 5 ? 404 : code === 8 ? 429 : 500;
  text(res, status, grpcErrorString(err), code === 8 ? { 'Retry-After': '60' } : {});
}

/** The path's segments, percent-decoded; undefined when one cannot be decoded. */
export function segments(pathname: string): string[] | undefined {
  try {
    return pathname.split('/').slice(1).map((s) => decodeURIComponent(s));
  } catch {
    return undefined;
  }
}
