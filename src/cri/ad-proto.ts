import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType } from '../generated/active_directory.js';
import type { ActiveDirectoryClient, ActiveDirectoryDefinition } from '../generated/criwinsim/ad/v1/ActiveDirectory.js';
import { unixEndpoint, unixSocketPath } from './endpoint.js';
import { CRI_LOADER_OPTIONS, protoRootDirectory } from './proto.js';

export type { ActiveDirectoryClient };

const PROTO_FILE = join('criwinsim', 'ad', 'v1', 'active_directory.proto');

/** The criwinsim.ad.v1 package, loaded once when this module is first imported (read-only after). */
const adPackage = (
  grpc.loadPackageDefinition(protoLoader.loadSync(PROTO_FILE, { ...CRI_LOADER_OPTIONS, includeDirs: [protoRootDirectory()] })) as unknown as ProtoGrpcType
).criwinsim.ad.v1;

/** cri-winsim's ActiveDirectory service (not part of the CRI), served on the CRI socket. */
export function activeDirectoryServiceDefinition(): ActiveDirectoryDefinition {
  return adPackage.ActiveDirectory.service;
}

/** An ActiveDirectory client on a `unix:///path` endpoint (the runtime's CRI socket). */
export function createActiveDirectoryClient(endpoint: string): ActiveDirectoryClient {
  return new adPackage.ActiveDirectory(unixEndpoint(unixSocketPath(endpoint)), grpc.credentials.createInsecure());
}
