import { ApiError, OUTAGE_RETRY_AFTER_S } from "../../../schemas/errors.ts";

const MiB = 1024 * 1024;

/**
 * Scratch disk that format rewrites (a BMP's uncompressed pixels) may take: at most
 * `perFileMb` for one file, else 142 (the image is too large to be read here), and
 * `totalMb` for the process at once, else 250 with Retry-After (others hold it now).
 */
export class ScratchBudget {
  #inUse = 0;

  constructor(
    private readonly perFileMb: number,
    private readonly totalMb: number,
  ) {}

  /** Bytes held now. */
  get inUse(): number {
    return this.#inUse;
  }

  /** Reserves `bytes` or throws 142/250; returns what was reserved, for release(). */
  reserve(bytes: number): number {
    if (bytes > this.perFileMb * MiB) {
      throw new ApiError(142, {
        details: [{
          message: `this image needs ${
            Math.ceil(bytes / MiB)
          } MB of scratch space to be read; at most ${this.perFileMb} MB (BMP_SCRATCH_MB)`,
        }],
      });
    }
    if (this.#inUse + bytes > this.totalMb * MiB) {
      throw new ApiError(250, {
        headers: { "Retry-After": String(OUTAGE_RETRY_AFTER_S) },
        details: [{
          path: "disk",
          message:
            "other uploads are using the scratch space (BMP_SCRATCH_TOTAL_MB); try again shortly",
        }],
      });
    }
    this.#inUse += bytes;
    return bytes;
  }

  /** Gives back what reserve() returned. */
  release(bytes: number): void {
    this.#inUse -= bytes;
  }
}
