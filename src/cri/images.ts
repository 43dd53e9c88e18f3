import type { ImageServiceHandlers } from '../generated/runtime/v1/ImageService.js';
import type { ImageSpec__Output } from '../generated/runtime/v1/ImageSpec.js';
import type { CriBackend } from './backend.js';
import { streamUnimplemented, unary, type CallContext } from './call.js';
import { requireMessage, requireString } from './validation.js';

function requireImage(image: ImageSpec__Output | null): void {
  requireMessage(image, 'image');
  requireString(image.image, 'image.image');
}

const byImage = (req: { image: ImageSpec__Output | null }) => ({ image: req.image?.image });

export function imageHandlers(runtime: CriBackend, ctx: CallContext): ImageServiceHandlers {
  return {
    ListImages: unary(ctx, 'ListImages', (req) => runtime.listImages(req)),
    StreamImages: streamUnimplemented(ctx, 'StreamImages', 'use ListImages'),
    ImageStatus: unary(ctx, 'ImageStatus', async (req) => {
      requireImage(req.image);
      return runtime.imageStatus(req);
    }, byImage),
    PullImage: unary(ctx, 'PullImage', async (req) => {
      requireImage(req.image);
      return runtime.pullImage(req);
    }, byImage),
    RemoveImage: unary(ctx, 'RemoveImage', async (req) => {
      requireImage(req.image);
      return runtime.removeImage(req);
    }, byImage),
    ImageFsInfo: unary(ctx, 'ImageFsInfo', (req) => runtime.imageFsInfo(req)),
  };
}
