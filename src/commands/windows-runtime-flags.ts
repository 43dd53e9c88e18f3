import { Option, type Command } from 'commander';
import { AD_MODE_CHOICES, DEFAULT_AD_MODE } from '../runtime/windows/ad-mode.js';
import { DEFAULT_RUNTIME_FLAVOR, RUNTIME_FLAVORS } from '../runtime/runtime-flavor.js';

/** `--runtime-flavor` and `--ad-mode` as `runtime`, `node` and `demo` take them. */
export interface WindowsRuntimeFlags {
  runtimeFlavor?: string;
  adMode?: string;
}

const FLAVOR_HELP =
  'which real runtime to reproduce: dockershim-kep (the GMSA KEP: a temporary credential spec file, deleted after StartContainer), ' +
  'cri-dockerd (a registry value kept until RemoveContainer, no HostProcess), containerd (the credential spec string in the OCI spec)';

const AD_MODE_HELP =
  'when the node cannot use a gMSA: windows-server (what a WS2019/2022 host does: the container starts, identity commands fail) ' +
  'or gmsa-kep (the GMSA KEP: StartContainer fails); strict and realistic are deprecated names of gmsa-kep and windows-server';

/**
 * Adds both flags. `defaults` false (demo): no default, so the example's own settings apply
 * unless the flag is given.
 */
export function addWindowsRuntimeFlags(command: Command, defaults = true): Command {
  const flavor = new Option('--runtime-flavor <flavor>', FLAVOR_HELP).choices([...RUNTIME_FLAVORS]);
  const adMode = new Option('--ad-mode <mode>', AD_MODE_HELP).choices([...AD_MODE_CHOICES]);
  if (defaults) {
    flavor.default(DEFAULT_RUNTIME_FLAVOR);
    adMode.default(DEFAULT_AD_MODE);
  }
  return command.addOption(flavor).addOption(adMode);
}
