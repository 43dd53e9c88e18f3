import type { WindowsSession } from '../emulator/windows-identity.js';
import { windowsIdentity } from './container-start-windows.js';
import type { RuntimeContext } from './runtime-context.js';
import type { ContainerRecord } from './store/container-store.js';
import type { ContainerIdentity } from './windows/container-identity.js';
import { ERROR_BAD_NETPATH, openShare, parseUncPath, type ShareAccessMode, type ShareEntry, type ShareLocation, type ShareResult } from './windows/file-shares.js';
import type { NodeDirectory } from './windows/node-directory.js';
import { currentIdentity } from './windows/shared-gmsa-trust.js';

/**
 * The node and its Active Directory as they are now: the one place identity commands and file
 * shares read the domain from (a live domain swaps what this returns; nothing copies it).
 */
export function currentDirectory(ctx: RuntimeContext): NodeDirectory {
  return ctx.windows.node;
}

/** A started Windows container's identity now: its decision, and the shared secure channel's state. */
export function liveIdentity(ctx: RuntimeContext, container: ContainerRecord): ContainerIdentity | undefined {
  const identity = windowsIdentity(ctx, container);
  return identity === undefined ? undefined : currentIdentity(ctx, container, identity, (c) => windowsIdentity(ctx, c));
}

/**
 * What a process of a Windows container asks of the node and the domain (emulator's
 * WindowsSession): each call reads the domain and the container's identity at that moment.
 * A class, so that a process target holds one small object, not a closure per method.
 */
class ContainerWindowsSession implements WindowsSession {
  constructor(
    private readonly ctx: RuntimeContext,
    private readonly container: ContainerRecord,
  ) {}

  identity(): ContainerIdentity | undefined {
    return liveIdentity(this.ctx, this.container);
  }

  directory(): NodeDirectory {
    return currentDirectory(this.ctx);
  }

  resetSecureChannel(): void {
    this.ctx.windows.channelLogons.set(this.container, this.ctx.clock.nowNanos());
  }

  private open(path: string, mode: ShareAccessMode): ShareResult<ShareLocation> {
    const unc = parseUncPath(path);
    const identity = this.identity();
    if (unc === undefined || identity === undefined) return { ok: false, error: ERROR_BAD_NETPATH };
    const opened = openShare(currentDirectory(this.ctx), identity, unc, mode);
    return opened.ok ? { ok: true, value: opened.location } : opened;
  }

  readFile(path: string): ShareResult<string> {
    const opened = this.open(path, 'read');
    return opened.ok ? this.ctx.windows.fileShares.read(opened.value) : opened;
  }

  writeFile(path: string, content: string, append: boolean): ShareResult<void> {
    const opened = this.open(path, 'write');
    return opened.ok ? this.ctx.windows.fileShares.write(opened.value, content, append) : opened;
  }

  list(path: string): ShareResult<ShareEntry[]> {
    const opened = this.open(path, 'read');
    return opened.ok ? this.ctx.windows.fileShares.list(opened.value) : opened;
  }

  itemKind(path: string): ShareResult<'file' | 'directory' | undefined> {
    const opened = this.open(path, 'read');
    return opened.ok ? { ok: true, value: this.ctx.windows.fileShares.kind(opened.value) } : opened;
  }
}

/** The session of a Windows container's processes (ExecutionTarget.platform[WINDOWS_SESSION_KEY]). */
export function windowsSession(ctx: RuntimeContext, container: ContainerRecord): WindowsSession {
  return new ContainerWindowsSession(ctx, container);
}
