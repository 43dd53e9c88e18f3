/**
 * /explain/{namespace}/{pod}: `cri-winsim explain` for a pod of this node, as JSON
 * (src/kubelet/explain): the kubelet's records of the pod and the runtime's through its Identity
 * service. cri-winsim's own route (the real kubelet has none); authorized as `nodes/proxy`, like
 * every path the kubelet does not name, and reached through the API server's node proxy
 * (`kubectl get --raw /api/v1/nodes/NODE/proxy/explain/NS/POD`).
 */
import { createIdentityClient } from '../../../cri/identity-service.js';
import { explainRecordedPod } from '../../explain/gather-explanation.js';
import { json, text } from '../http-replies.js';
import type { Route } from '../route-context.js';

export const explainRoute: Route = {
  root: 'explain',
  methods: ['GET'],
  matches: (rest) => rest.length === 2 && rest.every((s) => s !== ''),
  async handle(ctx, { res, rest }) {
    const [namespace, name] = rest as [string, string];
    const record = ctx.podRecord?.(namespace, name);
    if (record === undefined) return text(res, 404, `pod ${namespace}/${name} not found on node ${ctx.nodeName}\n`);
    const identity = createIdentityClient(ctx.cri.endpoint);
    try {
      json(res, await explainRecordedPod(identity, record, ctx.callTimeoutMs));
    } finally {
      identity.close();
    }
  },
};
