import { systemClock } from '../../src/runtime/clock.js';
import { composeSpec, withHostname, withMounts, type OciMount } from '../../src/runtime/oci/spec.js';
import { registerBuiltinCommands } from '../../src/emulator/builtin-commands.js';
import { CommandRegistry, type ExecutionTarget } from '../../src/emulator/command-registry.js';
import { ProcessTable } from '../../src/emulator/process-table.js';
import { ContainerFiles } from '../../src/emulator/container-files.js';
import { SimulatedProcess } from '../../src/emulator/simulated-process.js';

export interface RunResult {
  stdout: string;
  stderr: string;
  exitCode: number;
  signal?: string;
}

export function testTarget(os: 'linux' | 'windows' = 'linux', mounts: OciMount[] = []): ExecutionTarget {
  return {
    containerId: 'c'.repeat(64),
    sandboxId: 's'.repeat(64),
    os,
    hostname: 'web-0',
    ociSpec: composeSpec(os, withHostname('web-0'), withMounts(mounts)),
    user: os === 'windows' ? 'ContainerUser' : 'root',
    // A loopback pod IP of its own, so simulated servers (nginx, httpd, IIS) can bind port 80.
    platform: { podIp: `127.251.${1 + Math.floor(Math.random() * 254)}.${1 + Math.floor(Math.random() * 254)}` },
    processes: new ProcessTable(),
    files: ContainerFiles.of(new Map([['/etc/hostname', 'web-0\n']])),
  };
}

export function testRegistry(): CommandRegistry {
  const registry = new CommandRegistry();
  registerBuiltinCommands(registry);
  return registry;
}

/** Starts argv in the emulator and returns the process with its collected output. */
export function start(argv: string[], options: { target?: ExecutionTarget; registry?: CommandRegistry; init?: boolean; env?: Record<string, string> } = {}) {
  const out = { stdout: '', stderr: '' };
  const process = SimulatedProcess.start({
    registry: options.registry ?? testRegistry(),
    clock: systemClock,
    target: options.target ?? testTarget(),
    argv,
    env: new Map(Object.entries(options.env ?? { PATH: '/bin' })),
    io: { stdout: (t) => (out.stdout += t), stderr: (t) => (out.stderr += t) },
    init: options.init ?? false,
  });
  return { process, out };
}

/** Runs argv to completion. */
export async function run(argv: string[], options: Parameters<typeof start>[1] = {}): Promise<RunResult> {
  const { process, out } = start(argv, options);
  const exit = await process.exited;
  const result: RunResult = { ...out, exitCode: exit.exitCode };
  if (exit.signal !== undefined) result.signal = exit.signal;
  return result;
}
