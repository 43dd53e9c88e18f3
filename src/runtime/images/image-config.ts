import type { ImageProgram } from './image-program.js';

/** What an image's config says about how to run it (the OCI image config fields the CRI uses). */
export interface ImageConfig {
  os: 'linux' | 'windows';
  /** The image's USER: a name, a uid, `uid:gid` or `name:group`; '' means root. */
  user: string;
  entrypoint: string[];
  cmd: string[];
  env: string[];
  workingDir: string;
  stopSignal?: string;
  /** The config's `ExposedPorts` (TCP port numbers): where the image's program answers. */
  exposedPorts?: number[];
  /**
   * The image's own program, run when the container's command is none the emulator knows: present
   * for images from the user's images file and for references nobody described.
   */
  program?: ImageProgram;
  /** The platform's `os.version` (Windows images: the build they were made for, `10.0.20348.2849`). */
  osVersion?: string;
  /** The config's `Labels`. */
  labels?: Record<string, string>;
}
