/**
 * The kubelet's garbage-collection flags (kubernetes v1.34 cmd/kubelet options.go and
 * KubeletConfiguration defaults) and the node a kubelet without an API server admits against,
 * shared by `cri-winsim kubelet` (static pods, `run`) and `cri-winsim node`.
 */
import type { Command } from 'commander';
import type { GarbageCollectorOptions } from '../kubelet/gc/garbage-collector.js';
import { standaloneNode, type AdmissionNode } from '../kubelet/kubelet-admission.js';
import { resourceAmount } from '../apiserver/quantity.js';
import { UsageError, durationFlag, integerFlag } from './cli-errors.js';
import { durationMs } from './go-duration.js';
import { parseNodeLabels, parseTaints } from './registration-flags.js';

export interface GcFlagValues {
  maximumDeadContainersPerContainer: string;
  maximumDeadContainers: string;
  minimumContainerTtlDuration: string;
  imageGcHighThreshold: string;
  imageGcLowThreshold: string;
  minimumImageTtlDuration: string;
}

/** Adds the flags with the kubelet's defaults (through `add`, which skips flags already there). */
export function addGcFlags(add: (flags: string, description: string, defaultValue?: string) => void): void {
  add('--maximum-dead-containers-per-container <n>', 'dead containers kept per container (negative: no limit)', '1');
  add('--maximum-dead-containers <n>', 'dead containers kept on the node in all (negative: no limit)', '-1');
  add('--minimum-container-ttl-duration <duration>', 'a dead container younger than this is never collected', '0s');
  add('--image-gc-high-threshold <percent>', 'image filesystem usage at which image garbage collection runs (100: never)', '85');
  add('--image-gc-low-threshold <percent>', 'image filesystem usage image garbage collection frees down to', '80');
  add('--minimum-image-ttl-duration <duration>', 'an unused image younger than this is never collected', '2m0s');
}

/**
 * The GC policies of the flags, checked as the kubelet's configuration validation checks them
 * (pkg/kubelet/apis/config/validation/validation.go); `imageFsCapacity` is the node's
 * ephemeral-storage capacity, the simulated image filesystem's size.
 */
export function gcOptions(flags: GcFlagValues, imageFsCapacity: string): Omit<GarbageCollectorOptions, 'onNodeEvent'> {
  const high = integerFlag('--image-gc-high-threshold', flags.imageGcHighThreshold);
  const low = integerFlag('--image-gc-low-threshold', flags.imageGcLowThreshold);
  if (high < 0 || high > 100) throw new UsageError(`invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) ${high} must be between 0 and 100, inclusive`);
  if (low < 0 || low > 100) throw new UsageError(`invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) ${low} must be between 0 and 100, inclusive`);
  if (low >= high) throw new UsageError(`invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) ${low} must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) ${high}`);
  return {
    containerPolicy: {
      maxPerPodContainer: integerFlag('--maximum-dead-containers-per-container', flags.maximumDeadContainersPerContainer),
      maxContainers: integerFlag('--maximum-dead-containers', flags.maximumDeadContainers),
      minAgeMs: durationMs(durationFlag('--minimum-container-ttl-duration', flags.minimumContainerTtlDuration)),
    },
    imagePolicy: { highThresholdPercent: high, lowThresholdPercent: low, minAgeMs: durationMs(durationFlag('--minimum-image-ttl-duration', flags.minimumImageTtlDuration)) },
    imageFsCapacityBytes: resourceAmount('ephemeral-storage', imageFsCapacity),
  };
}

interface CapacityFlagValues {
  cpu: string;
  memory: string;
  ephemeralStorage: string;
  maxPods: string;
  nodeLabels?: string;
  registerWithTaints?: string;
}

/**
 * The Node of `kubelet run` and the static-pod loop: its name, the capacity flags node mode
 * reports, and --node-labels / --register-with-taints as node mode registers them.
 */
export function standaloneNodeOf(command: Command, name: string): AdmissionNode {
  const flags = command.optsWithGlobals<CapacityFlagValues & Record<string, unknown>>();
  const node = standaloneNode(name, {
    cpu: flags.cpu ?? '4',
    memory: flags.memory ?? '16Gi',
    ephemeralStorage: flags.ephemeralStorage ?? '100Gi',
    maxPods: integerFlag('--max-pods', flags.maxPods ?? '110', { min: 1 }),
  });
  return { ...node, labels: { ...node.labels, ...parseNodeLabels(flags.nodeLabels) }, taints: parseTaints(flags.registerWithTaints) };
}

/** The GC options of a command's flags (its own and its parent's). */
export function commandGcOptions(command: Command): Omit<GarbageCollectorOptions, 'onNodeEvent'> {
  const flags = command.optsWithGlobals<GcFlagValues & Partial<CapacityFlagValues> & Record<string, unknown>>();
  return gcOptions(flags, flags.ephemeralStorage ?? '100Gi');
}
