import type { Logger } from '../log.js';

/**
 * Resolves with the first SIGTERM/SIGINT, which starts a graceful shutdown; a second one means
 * "now" and exits at once. Call it before announcing readiness, so a signal sent on seeing the
 * ready line is never missed.
 */
export function untilSignal(logger: Logger): Promise<NodeJS.Signals> {
  return new Promise((resolveSignal) => {
    let received = false;
    const onSignal = (sig: NodeJS.Signals): void => {
      if (!received) {
        received = true;
        resolveSignal(sig);
        return;
      }
      logger.warn({ signal: sig }, 'second signal during shutdown; exiting now');
      process.exit(1);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}
