/**
 * cri-winsim's Identity service (proto/criwinsim/identity/v1/identity.proto): what the runtime did
 * with a container's Windows identity, for `cri-winsim explain`. Served on the CRI socket beside
 * runtime.v1 by the same server (who may use the CRI socket may read it; nothing new listens),
 * through the same generic edge: the backend's method, errors mapped to codes once (status.ts).
 */
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType } from '../generated/identity.js';
import type { IdentityClient, IdentityDefinition } from '../generated/criwinsim/identity/v1/Identity.js';
import type { IdentityRuntime } from '../runtime/identity-explain.js';
import { CRI_LOADER_OPTIONS, protoRootDirectory } from './proto.js';
import { unixEndpoint, unixSocketPath } from './endpoint.js';

export type { IdentityClient };
/** What a backend serves the Identity service with; a backend without it answers UNIMPLEMENTED. */
export type IdentityBackend = IdentityRuntime;

const IDENTITY_PROTO = join('criwinsim', 'identity', 'v1', 'identity.proto');

/** The criwinsim.identity.v1 package, loaded once when this module is first imported (read-only after), as proto.ts loads runtime.v1. */
const identityPackage = (
  grpc.loadPackageDefinition(protoLoader.loadSync(IDENTITY_PROTO, { ...CRI_LOADER_OPTIONS, includeDirs: [protoRootDirectory()] })) as unknown as ProtoGrpcType
).criwinsim.identity.v1;

export function identityServiceDefinition(): IdentityDefinition {
  return identityPackage.Identity.service;
}

/** An Identity client on `unix:///path`, its own channel (close it when done). */
export function createIdentityClient(endpoint: string): IdentityClient {
  const Identity = identityPackage.Identity;
  return new Identity(unixEndpoint(unixSocketPath(endpoint)), grpc.credentials.createInsecure());
}
