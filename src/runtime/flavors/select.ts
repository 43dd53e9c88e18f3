import { RuntimeError } from '../errors.js';
import { parseCredentialSpecTransport } from '../windows/credential-spec-handoff.js';
import type { WindowsRuntime, WindowsRuntimeOptions } from '../windows/windows-runtime.js';
import { ContainerdFlavor } from './containerd.js';
import { CriDockerdFlavor } from './cri-dockerd.js';
import { DockershimKepFlavor } from './dockershim-kep.js';
import { DEFAULT_RUNTIME_FLAVOR, parseRuntimeFlavor, type FlavorChoice, type RuntimeFlavor } from './flavor.js';

/**
 * The flavor a runtime value runs with (`--runtime-flavor`, `--credspec-transport`), checked
 * before the runtime creates anything. `--credspec-transport`: the KEP's dockershim takes either
 * (file by default); cri-dockerd always writes registry values and containerd hands nothing over,
 * so for them a conflicting value is refused rather than ignored.
 */
export function chooseRuntimeFlavor(options: Pick<WindowsRuntimeOptions, 'runtimeFlavor' | 'credentialSpecTransport'>): FlavorChoice {
  const transport = options.credentialSpecTransport === undefined ? undefined : parseCredentialSpecTransport(options.credentialSpecTransport);
  const name = parseRuntimeFlavor(options.runtimeFlavor ?? DEFAULT_RUNTIME_FLAVOR);
  switch (name) {
    case 'dockershim-kep':
      return { name, transport: transport ?? 'file' };
    case 'cri-dockerd':
      if (transport !== undefined && transport !== 'registry') {
        throw new RuntimeError('InvalidArgument', `--credspec-transport ${transport}: the cri-dockerd flavor hands the credential spec over in a registry value`);
      }
      return { name, transport: 'registry' };
    case 'containerd':
      if (transport !== undefined) {
        throw new RuntimeError('InvalidArgument', `--credspec-transport ${transport}: the containerd flavor has no credential spec hand-off (the spec string is in the OCI spec)`);
      }
      return { name, transport: undefined };
  }
}

/** The flavor the runtime's handlers use (`ctx.flavor`), made once the runtime's Windows path is open. */
export function openRuntimeFlavor(choice: FlavorChoice, windows: WindowsRuntime): RuntimeFlavor {
  switch (choice.name) {
    case 'dockershim-kep':
      return new DockershimKepFlavor(windows);
    case 'cri-dockerd':
      return new CriDockerdFlavor(windows);
    case 'containerd':
      return new ContainerdFlavor();
  }
}
