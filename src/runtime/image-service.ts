import { setTimeout as delay } from 'node:timers/promises';
import { join } from 'node:path';
import type { ImageFsInfoResponse } from '../generated/runtime/v1/ImageFsInfoResponse.js';
import type { ImageStatusRequest__Output } from '../generated/runtime/v1/ImageStatusRequest.js';
import type { ImageStatusResponse } from '../generated/runtime/v1/ImageStatusResponse.js';
import type { ListImagesRequest__Output } from '../generated/runtime/v1/ListImagesRequest.js';
import type { ListImagesResponse } from '../generated/runtime/v1/ListImagesResponse.js';
import type { PullImageRequest__Output } from '../generated/runtime/v1/PullImageRequest.js';
import type { PullImageResponse } from '../generated/runtime/v1/PullImageResponse.js';
import type { RemoveImageRequest__Output } from '../generated/runtime/v1/RemoveImageRequest.js';
import type { RemoveImageResponse } from '../generated/runtime/v1/RemoveImageResponse.js';
import { nanosToWire } from './clock.js';
import { imageInfo, toImage } from './cri-views.js';
import { RuntimeError } from './errors.js';
import { formatReference, parseImageReference } from './images/reference.js';
import type { RuntimeContext } from './runtime-context.js';
import type { RpcHandlers } from './rpc.js';
import { requireField } from './validation/request.js';

/**
 * Whether a pull is for a Windows container, which decides the platform containerd matches (the
 * rule is docs/images.md's): the sandbox it is for is a Windows one as RunPodSandbox decides it —
 * its config has a `windows` section, or the runtime's sandboxes are Windows by default (a pull
 * with no sandbox config included). Any other pull is for the Linux sandboxes this runtime also
 * serves (critest's): it takes the Linux entry of a list.
 */
export function isWindowsPull(ctx: RuntimeContext, req: PullImageRequest__Output): boolean {
  return (req.sandbox_config?.windows ?? null) !== null || ctx.settings.defaultSandboxOs === 'windows';
}

/**
 * PullImage from the simulated registry: the reference is normalised (`busybox` →
 * `docker.io/library/busybox:latest`) and resolved through the image world (images file,
 * catalogue, unknown-image rule); a registry that needs credentials checks `auth`; the platform
 * manifest is chosen as containerd chooses it. Resolves with the image id (critest compares it
 * with ListImages ids). `auth` is never logged.
 */
export async function pullImage(ctx: RuntimeContext, req: PullImageRequest__Output): Promise<PullImageResponse> {
  const name = req.image?.image ?? '';
  requireField(name, 'image.image');
  const ref = parseImageReference(name);
  const normalised = formatReference(ref);
  // containerd 2.x image_pull.go: "CRI requires the request to be rejected if the runtime handler is unknown."
  const handler = req.image?.runtime_handler ?? '';
  if (handler !== '' && !ctx.settings.runtimeHandlers.includes(handler)) {
    throw new RuntimeError('InvalidArgument', `unknown runtime handler "${handler}": invalid argument`);
  }
  const found = ctx.registry.lookup(normalised);
  if (ctx.settings.pullDelayMs > 0) await delay(ctx.settings.pullDelayMs);
  const host = ref.name.split('/')[0] ?? '';
  if (found === undefined) {
    const why = host === 'docker.io'
      ? 'pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed'
      : `${normalised}: not found`;
    throw new RuntimeError('NotFound', `failed to pull and unpack image "${normalised}": failed to resolve reference "${normalised}": ${why}`);
  }
  ctx.registry.authorize(host, ref.name, normalised, req.auth);
  const chosen = ctx.registry.select(found.index, { windows: isWindowsPull(ctx, req), hostBuild: ctx.registry.hostBuild }, normalised);
  const pinned = /(^|\/)pause:/.test(normalised);
  const image = ctx.images.add(chosen, ref, pinned);
  ctx.logger.info({ image: normalised, id: image.id, from: found.layer, os: chosen.config.os, osVersion: chosen.config.osVersion }, 'image pulled');
  return { image_ref: image.id };
}

/** ImageStatus by id, tag or digest; an image that is not present is no error, just no image. */
export function imageStatus(ctx: RuntimeContext, req: ImageStatusRequest__Output): ImageStatusResponse {
  const name = req.image?.image ?? '';
  requireField(name, 'image.image');
  const image = ctx.images.resolve(name);
  if (image === undefined) return {};
  const response: ImageStatusResponse = { image: toImage(image) };
  if (req.verbose) response.info = imageInfo(image);
  return response;
}

/** ListImages; a filter image (crictl sends '' for none) narrows it to that reference. */
export function listImages(ctx: RuntimeContext, req: ListImagesRequest__Output): ListImagesResponse {
  const filter = req.filter?.image?.image ?? '';
  if (filter === '') return { images: ctx.images.list().map(toImage) };
  const image = ctx.images.resolve(filter);
  return { images: image === undefined ? [] : [toImage(image)] };
}

/** RemoveImage by id, tag or digest removes the image with all its tags; absent images succeed. */
export function removeImage(ctx: RuntimeContext, req: RemoveImageRequest__Output): RemoveImageResponse {
  const name = req.image?.image ?? '';
  requireField(name, 'image.image');
  const image = ctx.images.resolve(name);
  if (image !== undefined) {
    ctx.images.remove(image.id);
    ctx.logger.info({ image: name, id: image.id }, 'image removed');
  }
  return {};
}

export function imageFsInfo(ctx: RuntimeContext): ImageFsInfoResponse {
  const timestamp = nanosToWire(ctx.clock.nowNanos());
  const images = ctx.images.list();
  const imageBytes = images.reduce((n, i) => n + i.size, 0);
  let containerBytes = 0;
  for (const c of ctx.containers.all()) containerBytes += 4096 + (c.live.logWriter?.bytesWritten ?? 0);
  return {
    image_filesystems: [{
      timestamp,
      fs_id: { mountpoint: join(ctx.settings.stateDir, 'images') },
      used_bytes: { value: String(imageBytes) },
      inodes_used: { value: String(images.length * 128) },
    }],
    container_filesystems: [{
      timestamp,
      fs_id: { mountpoint: join(ctx.settings.stateDir, 'containers') },
      used_bytes: { value: String(containerBytes) },
      inodes_used: { value: String(ctx.containers.size * 4) },
    }],
  };
}

/** The RPCs this file serves (see rpc.ts). */
export const imageServiceRpcs = { ListImages: listImages, ImageStatus: imageStatus, PullImage: pullImage, RemoveImage: removeImage, ImageFsInfo: imageFsInfo } satisfies RpcHandlers;
