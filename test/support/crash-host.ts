// A pre-warmed `cri-winsim runtime` process for the crash tests (test/e2e/crash-rounds.ts): it
// loads the runtime's modules (the command, the node runtime, better-sqlite3) once, tells its
// parent "warm" over the IPC channel, then waits for one "open" message with the command line of
// `cri-winsim runtime` and runs that command as the CLI does (the same commander command and
// serveRuntime) until it is killed. A crash test starts the next one while the current round runs,
// so a restart costs the opening of the state dir, not Node's start-up and module loading.
import { Command } from 'commander';
import { runtimeCommand } from '../../src/commands/runtime.js';

interface OpenMessage {
  open: string[];
}

const isOpen = (m: unknown): m is OpenMessage =>
  typeof m === 'object' && m !== null && Array.isArray((m as { open?: unknown }).open);

async function main(): Promise<void> {
  // What `openNodeRuntime` imports on demand, imported now so the open does not wait for it.
  await import('../../src/runtime/node-runtime.js');
  await import('better-sqlite3');
  const args = await new Promise<string[]>((resolve, reject) => {
    process.once('message', (m: unknown) => (isOpen(m) ? resolve(m.open) : reject(new Error(`crash host: unexpected message ${JSON.stringify(m)}`))));
    // The parent went away before it needed this process: nothing to do.
    process.once('disconnect', () => process.exit(0));
    process.send?.('warm');
  });
  // Stay alive only as long as the parent: a parent that dies leaves no runtime behind.
  process.channel?.unref();
  const program = new Command('cri-winsim').exitOverride();
  program.addCommand(runtimeCommand());
  await program.parseAsync(['runtime', ...args], { from: 'user' });
}

main().catch((err: unknown) => {
  console.error(`crash host: ${(err as Error).stack ?? String(err)}`);
  process.exit(1);
});
