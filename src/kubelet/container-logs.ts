/**
 * `kubelet logs`: a container's CRI log file read as the kubelet's log reader does
 * (pkg/kubelet/kuberuntime/logs): each line `<RFC3339Nano> <stream> <P|F> <text>`, partial
 * lines (P) joined with what follows, `--timestamps` putting the line's time in front, `--tail N`
 * the last N lines, `-f` following the file until the container exits or the caller stops.
 * The file is found through ContainerStatus (log_path), as the kubelet finds it.
 */
import { open, readFile } from 'node:fs/promises';
import { unaryCall, type CriClient } from '../cri/proto.js';

export interface LogLine {
  readonly time: string;
  readonly stream: 'stdout' | 'stderr';
  /** With its newline, unless the file ends in a partial line. */
  readonly text: string;
}

/** Complete lines of a CRI log text; `rest` is an unfinished last line (no newline yet). */
export function parseCriLog(content: string): { lines: LogLine[]; rest: string } {
  const lines: LogLine[] = [];
  let partial: { time: string; stream: 'stdout' | 'stderr'; text: string } | undefined;
  const end = content.lastIndexOf('\n');
  for (const raw of content.slice(0, end + 1).split('\n')) {
    const m = /^(\S+) (stdout|stderr) ([PF]) ?(.*)$/.exec(raw);
    if (m === null) continue;
    const [, time, stream, tag, text] = m as unknown as [string, string, 'stdout' | 'stderr', string, string];
    if (tag === 'P') {
      partial = partial === undefined ? { time, stream, text } : { ...partial, text: partial.text + text };
      continue;
    }
    lines.push({ time: partial?.time ?? time, stream, text: `${partial?.text ?? ''}${text}\n` });
    partial = undefined;
  }
  return { lines, rest: content.slice(end + 1) };
}

export interface LogOptions {
  readonly follow?: boolean;
  /** The last N lines; negative or undefined: all. */
  readonly tail?: number;
  readonly timestamps?: boolean;
  readonly callTimeoutMs?: number;
  /** Stops following. */
  readonly signal?: AbortSignal;
  /** How often a followed file is read again (default 200 ms). */
  readonly pollMs?: number;
}

const ContainerStateRunning = 1;

const format = (line: LogLine, timestamps: boolean): string => (timestamps ? `${line.time} ${line.text}` : line.text);

async function logPath(cri: CriClient, containerId: string, callTimeoutMs: number | undefined): Promise<{ path: string; running: boolean }> {
  const status = await unaryCall(cri.runtime, 'ContainerStatus', { container_id: containerId, verbose: false }, callTimeoutMs === undefined ? {} : { timeoutMs: callTimeoutMs });
  const path = status.status?.log_path ?? '';
  if (path === '') throw new Error(`container ${containerId} has no log file`);
  return { path, running: status.status?.state === ContainerStateRunning };
}

/** Writes the container's log to `write`; with `follow`, until the container stops or `signal` aborts. */
export async function streamContainerLog(cri: CriClient, containerId: string, write: (text: string) => void, options: LogOptions = {}): Promise<void> {
  const { path } = await logPath(cri, containerId, options.callTimeoutMs);
  const timestamps = options.timestamps === true;
  const content = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return '';
    throw err;
  });
  const { lines, rest } = parseCriLog(content);
  const shown = options.tail !== undefined && options.tail >= 0 ? lines.slice(Math.max(0, lines.length - options.tail)) : lines;
  write(shown.map((l) => format(l, timestamps)).join(''));
  if (options.follow !== true) return;

  let offset = Buffer.byteLength(content.slice(0, content.length - rest.length));
  const pollMs = options.pollMs ?? 200;
  for (;;) {
    if (options.signal?.aborted === true) return;
    const handle = await open(path, 'r').catch(() => undefined);
    if (handle !== undefined) {
      try {
        const { size } = await handle.stat();
        if (size > offset) {
          const buffer = Buffer.alloc(size - offset);
          await handle.read(buffer, 0, buffer.length, offset);
          const text = buffer.toString('utf8');
          const parsed = parseCriLog(text);
          offset += buffer.length - Buffer.byteLength(parsed.rest);
          write(parsed.lines.map((l) => format(l, timestamps)).join(''));
        }
      } finally {
        await handle.close();
      }
    }
    // Follow ends once the container stopped and its last lines were read.
    const { running } = await logPath(cri, containerId, options.callTimeoutMs);
    if (!running) {
      const final = await readFile(path).catch(() => Buffer.alloc(0));
      if (final.length > offset) {
        write(parseCriLog(final.subarray(offset).toString('utf8')).lines.map((l) => format(l, timestamps)).join(''));
      }
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, pollMs);
      options.signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });
  }
}
