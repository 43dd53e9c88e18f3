/** /pods: the PodList of the pods bound to the node (server.go getPods). */
import { json } from '../http-replies.js';
import type { Route } from '../route-context.js';

export const podsRoute: Route = {
  root: 'pods',
  methods: ['GET'],
  matches: (rest) => rest.length === 0 || (rest.length === 1 && rest[0] === ''),
  handle(ctx, { res }) {
    json(res, { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: ctx.pods() });
  },
};
