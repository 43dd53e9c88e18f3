import type { CommandContext } from './command-registry.js';
import { abortError, type ProcessSignal } from './process-signal.js';

/** Where the main process's target keeps its stdin channel (ExecutionTarget.platform). */
export const CONTAINER_STDIN_KEY = 'containerStdin';

/** The most input held for a main process that does not read it. */
const MAX_BUFFERED = 1024 * 1024;

/**
 * The standard input of a container's main process when its config asks for one (`stdin: true`):
 * what attached clients type (CRI Attach), read line by line by an interactive shell. It ends
 * when an attached client closes its input and the config says `stdin_once`.
 */
export class ContainerStdin {
  private buffer = '';
  private ended = false;
  private taken = false;
  private wake: (() => void) | undefined;

  write(text: string): void {
    if (this.ended) return;
    this.buffer = (this.buffer + text).slice(-MAX_BUFFERED);
    this.notify();
  }

  close(): void {
    this.ended = true;
    this.notify();
  }

  get closed(): boolean {
    return this.ended;
  }

  /** The main process's program claims the channel once (its children do not read it). */
  take(): boolean {
    if (this.taken) return false;
    this.taken = true;
    return true;
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** The next line without its newline; undefined at end of input (a last unterminated line first). */
  async readLine(signal: ProcessSignal): Promise<string | undefined> {
    for (;;) {
      if (signal.aborted) throw abortError(signal.reason);
      const nl = this.buffer.indexOf('\n');
      if (nl >= 0) {
        const line = this.buffer.slice(0, nl).replace(/\r$/, '');
        this.buffer = this.buffer.slice(nl + 1);
        return line;
      }
      if (this.ended) {
        if (this.buffer === '') return undefined;
        const last = this.buffer;
        this.buffer = '';
        return last;
      }
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => reject(abortError(signal.reason));
        signal.addEventListener('abort', onAbort, { once: true });
        this.wake = () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
      });
    }
  }
}

/** The main process's stdin channel when this program is the first to claim it. */
export function takeContainerStdin(ctx: CommandContext): ContainerStdin | undefined {
  const stdin = ctx.target.platform[CONTAINER_STDIN_KEY];
  return stdin instanceof ContainerStdin && stdin.take() ? stdin : undefined;
}
