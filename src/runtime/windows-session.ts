import type { WindowsSession } from '../emulator/windows-identity.js';
import { currentWindowsIdentity } from './container-start-windows.js';
import type { RuntimeContext } from './runtime-context.js';
import type { ContainerRecord } from './store/container-store.js';
import type { ContainerIdentity } from './windows/container-identity.js';
import { SmbClient, type FileShareContents, type ShareEntry, type ShareResult } from './windows/file-shares.js';
import type { NodeDirectory } from './windows/node-directory.js';

/**
 * The node and its Active Directory as they are now: the one place identity commands and file
 * shares read the domain from (a live domain swaps what this returns; nothing copies it).
 */
export function currentDirectory(ctx: RuntimeContext): NodeDirectory {
  return ctx.windows.node;
}

/** Where a session reads the domain and the container's identity, and what its secure-channel reset does. */
export interface WindowsSessionSources {
  /** The node and its Active Directory now. */
  directory(): NodeDirectory;
  /** The container's identity now (undefined before its start decided one). */
  identity(): ContainerIdentity | undefined;
  /** `nltest /sc_reset`: the container logs on again and holds its secure channel. */
  resetSecureChannel(): void;
  /** The contents of the domain's file shares. */
  readonly fileShares: FileShareContents;
}

/**
 * What a process of a Windows container asks of the node and the domain (emulator's
 * WindowsSession): each call reads the domain and the container's identity at that moment, and
 * file shares go through the runtime's SMB client. Holds accessors, no copy of the domain.
 */
export class ContainerWindowsSession implements WindowsSession {
  private readonly smb: SmbClient;

  constructor(private readonly sources: WindowsSessionSources) {
    this.smb = new SmbClient(() => sources.directory(), () => sources.identity(), sources.fileShares);
  }

  identity(): ContainerIdentity | undefined {
    return this.sources.identity();
  }

  directory(): NodeDirectory {
    return this.sources.directory();
  }

  resetSecureChannel(): void {
    this.sources.resetSecureChannel();
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

/** The session of a Windows container's processes (ExecutionTarget.platform[WINDOWS_SESSION_KEY]), made when a process starts. */
export function windowsSession(ctx: RuntimeContext, container: ContainerRecord): WindowsSession {
  return new ContainerWindowsSession({
    directory: () => currentDirectory(ctx),
    identity: () => currentWindowsIdentity(ctx, container),
    resetSecureChannel: () => ctx.windows.channelLogons.set(container, ctx.clock.nowNanos()),
    fileShares: ctx.windows.fileShares,
  });
}
