import type { WindowsSession } from '../emulator/windows-identity.js';
import { currentWindowsIdentity } from './container-start-windows.js';
import type { RuntimeContext } from './runtime-context.js';
import type { ContainerRecord } from './store/container-store.js';
import type { ContainerIdentity } from './windows/container-identity.js';
import { SmbClient, type ShareEntry, type ShareResult } from './windows/file-shares.js';
import type { NodeDirectory } from './windows/node-directory.js';

/**
 * The node and its Active Directory as they are now: the one place identity commands and file
 * shares read the domain from (a live domain swaps what this returns; nothing copies it).
 */
export function currentDirectory(ctx: RuntimeContext): NodeDirectory {
  return ctx.windows.node;
}

/**
 * What a process of a Windows container asks of the node and the domain (emulator's
 * WindowsSession): each call reads the domain and the container's identity at that moment.
 * Made when a process starts; holds accessors, no copy of the domain.
 */
class ContainerWindowsSession implements WindowsSession {
  private readonly smb: SmbClient;

  constructor(
    private readonly ctx: RuntimeContext,
    private readonly container: ContainerRecord,
  ) {
    this.smb = new SmbClient(() => currentDirectory(ctx), () => this.identity(), ctx.windows.fileShares);
  }

  identity(): ContainerIdentity | undefined {
    return currentWindowsIdentity(this.ctx, this.container);
  }

  directory(): NodeDirectory {
    return currentDirectory(this.ctx);
  }

  resetSecureChannel(): void {
    this.ctx.windows.channelLogons.set(this.container, this.ctx.clock.nowNanos());
  }

  readFile(path: string): ShareResult<string> {
    return this.smb.readFile(path);
  }

  writeFile(path: string, content: string, append: boolean): ShareResult<void> {
    return this.smb.writeFile(path, content, append);
  }

  list(path: string): ShareResult<ShareEntry[]> {
    return this.smb.list(path);
  }

  itemKind(path: string): ShareResult<'file' | 'directory' | undefined> {
    return this.smb.itemKind(path);
  }
}

/** The session of a Windows container's processes (ExecutionTarget.platform[WINDOWS_SESSION_KEY]). */
export function windowsSession(ctx: RuntimeContext, container: ContainerRecord): WindowsSession {
  return new ContainerWindowsSession(ctx, container);
}
