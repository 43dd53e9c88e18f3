import { RuntimeError } from './errors.js';
import { ContainerdFlavor } from './runtime-flavor-containerd.js';
import { CriDockerdFlavor } from './runtime-flavor-cri-dockerd.js';
import { DockershimKepFlavor } from './runtime-flavor-dockershim-kep.js';
import type { RuntimeFlavor, RuntimeFlavorName } from './runtime-flavor.js';
import type { CredentialSpecTransportKind } from './windows/credential-spec-handoff.js';

/**
 * The flavor a runtime value runs with, chosen once when it opens. `transport` is
 * `--credspec-transport`: the KEP's dockershim takes either (file by default); cri-dockerd
 * always writes registry values and containerd hands nothing over, so for them a conflicting
 * value is refused rather than ignored.
 */
export function selectRuntimeFlavor(name: RuntimeFlavorName, transport: CredentialSpecTransportKind | undefined): RuntimeFlavor {
  switch (name) {
    case 'dockershim-kep':
      return new DockershimKepFlavor(transport ?? 'file');
    case 'cri-dockerd':
      if (transport !== undefined && transport !== 'registry') {
        throw new RuntimeError('InvalidArgument', `--credspec-transport ${transport}: the cri-dockerd flavor hands the credential spec over in a registry value`);
      }
      return new CriDockerdFlavor();
    case 'containerd':
      if (transport !== undefined) {
        throw new RuntimeError('InvalidArgument', `--credspec-transport ${transport}: the containerd flavor has no credential spec hand-off (the spec string is in the OCI spec)`);
      }
      return new ContainerdFlavor();
  }
}
