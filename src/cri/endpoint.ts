import { isAbsolute } from 'node:path';

const UNIX_SCHEME = 'unix://';

/**
 * The socket path of a CRI endpoint. Only `unix:///absolute/path` is accepted: like crictl on
 * Linux, the simulator speaks CRI over unix sockets only, never TCP.
 */
export function unixSocketPath(endpoint: string): string {
  if (!endpoint.startsWith(UNIX_SCHEME)) {
    throw new Error(`CRI endpoint ${JSON.stringify(endpoint)} is not supported: only unix:///absolute/path.sock endpoints are`);
  }
  const path = endpoint.slice(UNIX_SCHEME.length);
  if (path === '' || !isAbsolute(path)) {
    throw new Error(`CRI endpoint ${JSON.stringify(endpoint)} must name an absolute socket path (unix:///absolute/path.sock)`);
  }
  return path;
}

/** The canonical endpoint form of a socket path. */
export function unixEndpoint(socketPath: string): string {
  return `${UNIX_SCHEME}${socketPath}`;
}
