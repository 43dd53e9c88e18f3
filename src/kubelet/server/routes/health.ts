/** /healthz and /healthz/{check} (server.go InstallDefaultHandlers: ping, log, syncloop). */
import { text } from '../http-replies.js';
import type { Route } from '../route-context.js';

export const healthRoute: Route = {
  root: 'healthz',
  matches: (rest) => rest.length <= 1,
  handle(ctx, { res, rest, query }) {
    const sub = rest[0] === '' ? undefined : rest[0];
    const checks: [string, string | undefined][] = [['ping', undefined], ['log', undefined], ['syncloop', ctx.syncLoopHealth()]];
    if (sub !== undefined) {
      const check = checks.find(([name]) => name === sub);
      if (check === undefined) return text(res, 404, '404 page not found\n');
      if (check[1] !== undefined) return text(res, 500, `internal server error: ${check[1]}\n`);
      return text(res, 200, 'ok');
    }
    const failed = checks.filter(([, error]) => error !== undefined);
    if (failed.length > 0 || query.has('verbose')) {
      const lines = checks.map(([name, error]) => (error === undefined ? `[+]${name} ok` : `[-]${name} failed: reason withheld`));
      const tail = failed.length > 0 ? 'healthz check failed' : 'healthz check passed';
      return text(res, failed.length > 0 ? 500 : 200, `${lines.join('\n')}\n${tail}\n`);
    }
    text(res, 200, 'ok');
  },
};
