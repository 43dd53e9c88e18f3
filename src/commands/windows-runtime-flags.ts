import { Option, type Command } from 'commander';
import { AD_MODE_CHOICES, DEFAULT_AD_MODE } from '../runtime/windows/ad-mode.js';
import { DEFAULT_RUNTIME_FLAVOR, RUNTIME_FLAVORS } from '../runtime/flavors/flavor.js';
import { UNKNOWN_IMAGE_RULES } from '../runtime/images/images-file.js';

/** `--runtime-flavor` and `--ad-mode` as `runtime`, `node` and `demo` take them. */
export interface WindowsRuntimeFlags {
  runtimeFlavor?: string;
  adMode?: string;
  /** `--images FILE`: the user's images, registries and unknown-image rule (docs/images.md). */
  images?: string;
  /** `--unknown-images`: windows (default), linux or not-found. */
  unknownImages?: string;
}

const IMAGES_HELP = 'images file: images beyond the built-in catalogue, registries that need credentials, the unknown-image rule (docs/images.md)';
const UNKNOWN_IMAGES_HELP =
  'what a reference nobody described is: windows (a Windows image of the node\'s build, the default), linux, or not-found';

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
  const unknownImages = new Option('--unknown-images <rule>', UNKNOWN_IMAGES_HELP).choices([...UNKNOWN_IMAGE_RULES]);
  return command.addOption(flavor).addOption(adMode).option('--images <file>', IMAGES_HELP).addOption(unknownImages);
}
