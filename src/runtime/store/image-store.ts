import type { ImageConfig, RegistryImage } from '../images/catalogue.js';
import { formatReference, isImageId, parseImageReference, type ImageReference } from '../images/reference.js';
import { IdPrefixIndex } from './id-index.js';

/** An image present on the node. */
export interface ImageRecord {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  config: ImageConfig;
  pinned: boolean;
}

/**
 * Local images, addressable by id (full, bare hex or unique hex prefix), by normalised tag and by
 * repo digest. Removing an image removes every reference to it, as containerd does.
 */
export class ImageStore {
  private readonly byId = new Map<string, ImageRecord>();
  private readonly byRef = new Map<string, string>();
  private readonly hexIndex = new IdPrefixIndex('image');
  /** Told of every image added or changed, and with undefined once removed (persistence). */
  private readonly listeners = new Set<(id: string, record: ImageRecord | undefined) => void>();

  onRecordChange(listener: (id: string, record: ImageRecord | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** An image as a restarted runtime reloads it (its tags and digests as they were). */
  restore(record: ImageRecord): void {
    this.byId.set(record.id, record);
    this.hexIndex.add(record.id.slice('sha256:'.length));
    for (const ref of [...record.repoTags, ...record.repoDigests]) this.byRef.set(ref, record.id);
  }

  get size(): number {
    return this.byId.size;
  }

  /** Records a pulled image under the reference it was pulled by; returns the stored record. */
  add(image: RegistryImage, pulledBy: ImageReference, pinned = false): ImageRecord {
    let record = this.byId.get(image.id);
    if (record === undefined) {
      record = { id: image.id, repoTags: [], repoDigests: [], size: image.size, config: image.config, pinned };
      this.byId.set(image.id, record);
      this.hexIndex.add(image.id.slice('sha256:'.length));
    }
    record.pinned ||= pinned;
    if (pulledBy.digest === undefined) {
      const tag = formatReference(pulledBy);
      // A tag moves to the image it was last pulled as (`docker pull` semantics).
      const previous = this.byRef.get(tag);
      if (previous !== undefined && previous !== image.id) this.dropRef(previous, tag);
      if (!record.repoTags.includes(tag)) record.repoTags.push(tag);
      this.byRef.set(tag, image.id);
    }
    const repoDigest = `${image.repository}@${image.digest}`;
    if (!record.repoDigests.includes(repoDigest)) record.repoDigests.push(repoDigest);
    this.byRef.set(repoDigest, image.id);
    for (const listener of this.listeners) listener(record.id, record);
    return record;
  }

  /**
   * The image a reference or id names, or undefined. References are normalised first
   * (`busybox` finds `docker.io/library/busybox:latest`); an unparsable reference that is not
   * an id finds nothing.
   */
  resolve(refOrId: string): ImageRecord | undefined {
    if (refOrId === '') return undefined;
    if (isImageId(refOrId)) {
      const id = refOrId.startsWith('sha256:') ? refOrId : `sha256:${refOrId}`;
      return this.byId.get(id);
    }
    let normalised: string | undefined;
    try {
      normalised = formatReference(parseImageReference(refOrId));
    } catch {
      normalised = undefined;
    }
    const id = normalised === undefined ? undefined : this.byRef.get(normalised);
    if (id !== undefined) return this.byId.get(id);
    const hex = refOrId.startsWith('sha256:') ? refOrId.slice(7) : refOrId;
    if (/^[0-9a-f]{4,63}$/.test(hex)) {
      try {
        const full = this.hexIndex.resolve(hex);
        return full === undefined ? undefined : this.byId.get(`sha256:${full}`);
      } catch {
        return undefined;
      }
    }
    return undefined;
  }

  get(id: string): ImageRecord | undefined {
    return this.byId.get(id);
  }

  /** Removes the image and every tag and digest pointing at it. */
  remove(id: string): boolean {
    const record = this.byId.get(id);
    if (record === undefined) return false;
    for (const ref of [...record.repoTags, ...record.repoDigests]) this.byRef.delete(ref);
    this.byId.delete(id);
    this.hexIndex.delete(id.slice('sha256:'.length));
    for (const listener of this.listeners) listener(id, undefined);
    return true;
  }

  list(): ImageRecord[] {
    return [...this.byId.values()];
  }

  private dropRef(id: string, ref: string): void {
    const record = this.byId.get(id);
    if (record === undefined) return;
    record.repoTags = record.repoTags.filter((t) => t !== ref);
    for (const listener of this.listeners) listener(id, record);
  }
}

/**
 * The uid or user name an image runs as, as ImageStatus reports it: a numeric USER (optionally
 * `uid:gid`) gives a uid, anything else a user name; an image without USER reports neither.
 */
export function imageUser(user: string): { uid?: bigint; username?: string } {
  if (user === '') return {};
  const name = user.split(':')[0] ?? '';
  if (/^[0-9]+$/.test(name)) return { uid: BigInt(name) };
  return { username: name };
}
