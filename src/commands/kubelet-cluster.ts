/**
 * The cluster a kubelet command admits pods against (--cluster DIR or --kubeconfig FILE) and the
 * user admission sees (--as, --as-group): the flags of kubelet-flags.ts read, apart from it, since
 * this loads the API objects' code that only the commands which admit pods need.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { defaultRequestingUser } from '../apiserver/admission.js';
import { DirectoryClusterSource, KubeconfigClusterSource, type ClusterSource } from '../apiserver/cluster.js';
import { requestingUser, type UserInfo } from '../apiserver/rbac.js';
import { UsageError } from './cli-errors.js';
import type { RawClusterFlags } from './kubelet-flags.js';

export function clusterSource(command: Command): ClusterSource {
  const options = command.optsWithGlobals<RawClusterFlags & Record<string, unknown>>();
  if (options.cluster !== undefined && options.kubeconfig !== undefined) throw new UsageError('--cluster and --kubeconfig are mutually exclusive');
  if (options.kubeconfig !== undefined) return new KubeconfigClusterSource(resolve(options.kubeconfig), options.context);
  if (options.cluster !== undefined) return new DirectoryClusterSource(resolve(options.cluster));
  throw new UsageError('the cluster objects are needed for admission: give --cluster DIR or --kubeconfig FILE');
}

/** kubectl's impersonation: --as-group without --as is refused, as kubectl refuses it. */
export function requestUser(command: Command): UserInfo {
  const options = command.optsWithGlobals<RawClusterFlags & Record<string, unknown>>();
  if (options.as === undefined) {
    if (options.asGroup.length > 0) throw new UsageError('requesting groups or user-extra for test without impersonating a user');
    return defaultRequestingUser;
  }
  return requestingUser(options.as, options.asGroup);
}
