/**
 * The node-mode flags, named as the real kubelet names them: `cri-winsim node` and `cri-winsim
 * kubelet --kubeconfig` share them. Apart from node.ts, which loads node mode itself (the API
 * client, the node's controllers), so that building the kubelet's command line loads none of it.
 */
import type { Command } from 'commander';
import { addGcFlags } from './gc-flags.js';

/** The node-mode flags (the real kubelet's names), shared by `node` and `kubelet --kubeconfig`. */
export function nodeModeOptions(command: Command): Command {
  // Flags the command already has (the kubelet command's own) are kept as they are.
  const add = (flags: string, description: string, defaultValue?: string): void => {
    const long = /--[a-z-]+/.exec(flags)![0];
    if (command.options.some((o) => o.long === long)) return;
    if (defaultValue === undefined) command.option(flags, description);
    else command.option(flags, description, defaultValue);
  };
  add('--kubeconfig <file>', 'kubeconfig of the cluster the node joins (its user: system:node:NAME in system:nodes, or one allowed to manage nodes)');
  add('--context <name>', 'the kubeconfig context to use');
  add('--hostname-override <name>', 'the Node name (lowercased)');
  add('--in-cluster', "use the pod's service account instead of --kubeconfig");
  add('--port <port>', "the kubelet server's port (0: a free one), advertised in the Node's daemonEndpoints", '10250');
  add('--tls-cert-file <file>', "the kubelet server's certificate (default: a self-signed one)");
  add('--tls-private-key-file <file>', 'the key of --tls-cert-file');
  add('--client-ca-file <file>', 'client certificates signed by this CA authenticate to the kubelet server (the API server uses one)');
  add('--anonymous-auth', 'let unauthenticated requests through to authorization as system:anonymous');
  add('--authorization-mode <mode>', 'Webhook (SubjectAccessReview) or AlwaysAllow', 'Webhook');
  add('--node-ip <ip>', 'InternalIP of the node (loopback only; default 127.0.0.1, or 127.0.1.x per node with --nodes)');
  add('--max-pods <n>', 'pods this node runs at most', '110');
  add('--node-labels <labels>', 'extra labels at registration: key=value,…');
  add('--register-with-taints <taints>', 'taints at registration: key=value:Effect,…');
  add('--node-status-update-frequency <duration>', 'how often the node status is computed (posted when changed, or every 5m)', '10s');
  add('--runtime-request-timeout <duration>', 'deadline of each CRI call', '2m');
  add('--kube-api-qps <qps>', "each node's API requests per second (a negative value: no limit)", '50');
  add('--kube-api-burst <n>', "each node's API requests in a burst", '100');
  add('--event-qps <qps>', "each node's event posts per second (a negative value: no limit)", '50');
  add('--event-burst <n>', "each node's event posts in a burst", '100');
  add('--cpu <n>', 'cpu capacity reported (cri-winsim flag)', '4');
  add('--memory <quantity>', 'memory capacity reported (cri-winsim flag)', '16Gi');
  add('--ephemeral-storage <quantity>', 'ephemeral-storage capacity reported, and the size of the simulated image filesystem (cri-winsim flag)', '100Gi');
  addGcFlags(add);
  return command;
}
