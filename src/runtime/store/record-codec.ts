import type { ContainerConfig__Output } from '../../generated/runtime/v1/ContainerConfig.js';
import type { PodSandboxConfig__Output } from '../../generated/runtime/v1/PodSandboxConfig.js';
import type { OciSpec } from '../oci/spec.js';
import { CONTAINER_FIELD_NAMES, type ContainerFields, type ContainerRecord, type ContainerStatusData } from './container-store.js';
import type { NetworkSettings } from '../runtime-context.js';
import type { ImageRecord } from './image-store.js';
import type { SandboxRecord, SandboxStatusData } from './sandbox-store.js';

/**
 * The stored form of the runtime's records: JSON, with bigints (nanosecond times, int64 fields of
 * configs) as `{"$bigint":"…"}`. A version field lets a later runtime refuse what it cannot read.
 */
export const RECORD_FORMAT = 1;

const replacer = (_key: string, value: unknown): unknown => (typeof value === 'bigint' ? { $bigint: value.toString() } : value);
const reviver = (_key: string, value: unknown): unknown => {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const big = (value as { $bigint?: unknown }).$bigint;
    if (typeof big === 'string' && Object.keys(value).length === 1) return BigInt(big);
  }
  return value;
};

export const encodeJson = (value: unknown): string => JSON.stringify(value, replacer);
export const decodeJson = (text: string): unknown => JSON.parse(text, reviver);

export interface StoredSandbox {
  v: number;
  id: string;
  name: string;
  config: PodSandboxConfig__Output;
  runtimeHandler: string;
  os: 'linux' | 'windows';
  createdAtNanos: bigint;
  hostname: string;
  ip: string;
  pid: number;
  logDirectory: string;
  ociSpec: OciSpec;
  platform: Record<string, unknown>;
  resources: { overhead: unknown; resources: unknown } | undefined;
  status: SandboxStatusData;
}

export function encodeSandbox(r: SandboxRecord): string {
  const stored: StoredSandbox = {
    v: RECORD_FORMAT,
    id: r.id,
    name: r.name,
    config: r.config,
    runtimeHandler: r.runtimeHandler,
    os: r.os,
    createdAtNanos: r.createdAtNanos,
    hostname: r.hostname,
    ip: r.ip,
    pid: r.pid,
    logDirectory: r.logDirectory,
    ociSpec: r.ociSpec,
    platform: r.platform,
    resources: r.resources,
    status: r.status,
  };
  return encodeJson(stored);
}

/** A container as stored: its fields (container-store.ts ContainerFields), its sandbox by id, the config without what the fields hold, its status. */
export type StoredContainer = { v: number; id: string; sandboxId: string } & ContainerFields & { config: ContainerConfig__Output; status: ContainerStatusData };

/**
 * A container's stored form, made by one constructor: every one is a fast object of one shape,
 * which JSON.stringify reads quickly (an object given the fields one by one after its literal
 * would fall back to a slow dictionary).
 */
class ContainerForm {
  constructor(r: ContainerRecord, config: ContainerConfig__Output) {
    const form = this as unknown as Record<string, unknown>;
    form['v'] = RECORD_FORMAT;
    form['id'] = r.id;
    form['sandboxId'] = r.sandboxId;
    for (const name of CONTAINER_FIELD_NAMES) form[name] = r[name];
    // The config's own copies of what the record keeps are left out (labels, annotations, metadata, image).
    form['config'] = { ...config, labels: {}, annotations: {}, metadata: null, image: null };
    form['status'] = r.status;
  }
}

export function encodeContainer(r: ContainerRecord, config: ContainerConfig__Output): string {
  return encodeJson(new ContainerForm(r, config));
}

export function encodeImage(r: ImageRecord): string {
  return encodeJson({ v: RECORD_FORMAT, ...r });
}

/** The id of the one `meta` row that holds the pod CIDRs UpdateRuntimeConfig set. */
export const NETWORK_RECORD_ID = 'network';

export interface StoredNetwork {
  v: number;
  id: typeof NETWORK_RECORD_ID;
  /** The loopback range UpdateRuntimeConfig set ('' none: the pool uses `--pod-cidr`). */
  podCidr: string;
  /** The non-loopback pod CIDR the kubelet sent, recorded and not used ('' none). */
  kubeletPodCidr: string;
}

export function encodeNetwork(n: NetworkSettings): string {
  const stored: StoredNetwork = { v: RECORD_FORMAT, id: NETWORK_RECORD_ID, podCidr: n.updatedPodCidr, kubeletPodCidr: n.kubeletPodCidr };
  return encodeJson(stored);
}

/** Parses a stored record and checks the fields every kind has; throws a message naming what is wrong. */
export function decodeStored<T extends { v: number; id: string }>(id: string, data: string, fields: readonly string[]): T {
  const value = decodeJson(data);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('not a JSON object');
  const record = value as Record<string, unknown>;
  if (record['v'] !== RECORD_FORMAT) throw new Error(`record format ${String(record['v'])} is not ${RECORD_FORMAT}`);
  if (record['id'] !== id) throw new Error(`its id field is ${JSON.stringify(record['id'])}`);
  for (const field of fields) {
    if (!(field in record)) throw new Error(`field ${field} is missing`);
  }
  return value as T;
}

export const SANDBOX_FIELDS = ['name', 'config', 'os', 'createdAtNanos', 'ip', 'pid', 'logDirectory', 'ociSpec', 'status'] as const;
export const CONTAINER_FIELDS = ['sandboxId', 'name', 'labels', 'annotations', 'imageConfig', 'os', 'createdAtNanos', 'logPath', 'args', 'securityOptions', 'config', 'status'] as const;
export const IMAGE_FIELDS = ['repoTags', 'repoDigests', 'size', 'config', 'pinned'] as const;
export const NETWORK_FIELDS = ['podCidr', 'kubeletPodCidr'] as const;
