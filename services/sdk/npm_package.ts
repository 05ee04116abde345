import { createTar, type TarFileInput } from "nanotar";

/**
 * The SDK as the npm package its package.json describes (`image-uploader-widget`), packed
 * as `npm pack` would (every entry under `package/`), so that `npm install
 * <service>/sdk/image-uploader-widget.tgz` installs it from this service. The public
 * registry's `image-uploader-widget` is someone else's package (issue #51), so the
 * service is where the documented name installs from.
 */
export interface NpmPackage {
  name: string;
  version: string;
  /** The gzipped tarball. */
  bytes: Uint8Array;
}

/** npm's own fixed date for packed files (1985-10-26), so the same files pack the same. */
const PACK_MTIME = Date.UTC(1985, 9, 26, 8, 15) / 1000;

/** Packs the package whose package.json is in `dir`: the manifest and its `files`. */
export async function packSdk(dir: URL): Promise<NpmPackage> {
  const manifest = await Deno.readFile(new URL("package.json", dir));
  const pkg = JSON.parse(new TextDecoder().decode(manifest));
  const entries: TarFileInput[] = [{
    name: "package/package.json",
    data: manifest,
  }];
  for (const listed of pkg.files as string[]) {
    for (const path of await filesOf(dir, listed)) {
      entries.push({
        name: `package/${path}`,
        data: await Deno.readFile(new URL(path, dir)),
      });
    }
  }
  const attrs = { mode: "644", mtime: PACK_MTIME, uid: 0, gid: 0 };
  return {
    name: pkg.name,
    version: pkg.version,
    bytes: await gzip(withEndOfArchive(createTar(
      entries.sort((a, b) => a.name.localeCompare(b.name)).map((e) => ({
        ...e,
        attrs,
      })),
    ))),
  };
}

/**
 * The tar with the two zero blocks that end an archive. nanotar rounds its buffer up to a
 * 10 KiB record and counts on the rounding to leave them; when the entries fill records
 * exactly (an SDK file of exactly 83 × 512 bytes did), there are none, and npm refuses
 * the package as truncated (TAR_BAD_ARCHIVE). Zeros past the end are allowed.
 */
export function withEndOfArchive(tar: Uint8Array): Uint8Array {
  const out = new Uint8Array(tar.length + 1024);
  out.set(tar);
  return out;
}

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream()
    .pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** The files at `path` in `dir` (itself, or every file under it), relative to `dir`. */
async function filesOf(dir: URL, path: string): Promise<string[]> {
  const clean = path.replace(/\/$/, "");
  if ((await Deno.stat(new URL(clean, dir))).isFile) return [clean];
  const out: string[] = [];
  for await (const e of Deno.readDir(new URL(`${clean}/`, dir))) {
    out.push(...await filesOf(dir, `${clean}/${e.name}`));
  }
  return out;
}
