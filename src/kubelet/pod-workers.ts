/** How many pods go through their pass at the same time unless told otherwise. */
export const defaultPodWorkers = 16;
/** More pod workers than this only queue up behind one socket. */
export const maxPodWorkers = 256;
