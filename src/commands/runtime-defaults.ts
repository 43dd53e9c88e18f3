/**
 * Where `cri-winsim runtime` serves and keeps its state unless told otherwise; the kubelet, `ad`,
 * node mode and the container's health check name them too, without loading the runtime command.
 */
export const DEFAULT_ENDPOINT = 'unix:///run/cri-winsim/cri.sock';
export const DEFAULT_STATE_DIR = '/var/lib/cri-winsim';
