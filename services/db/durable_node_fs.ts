import { NodeFS } from "@electric-sql/pglite/nodefs";
import { PGlite } from "@electric-sql/pglite";
import { fsyncSync } from "node:fs";
import { jsonLogger } from "../runtime/logger.ts";
import type { WalFlusher } from "./wal_flusher.ts";

/** PGlite's Emscripten module, as far as this file touches it. */
type PostgresMod = Parameters<NodeFS["init"]>[1];
/** An open file of Emscripten's NODEFS: `nfd` is the process's own descriptor. */
interface NodeStream {
  nfd?: number;
  path?: string;
}
interface NodeFsInternals {
  NODEFS: {
    stream_ops: {
      fsync?: (stream: NodeStream) => number;
      write: (stream: NodeStream, ...rest: unknown[]) => number;
      close: (stream: NodeStream) => void;
    };
    tryFSOperation<T>(f: () => T): T;
  };
}

/** Whether a file of the data directory is a WAL segment. */
function isWal(path: string): boolean {
  return path.includes("/pg_wal/");
}

/**
 * PGlite's on-disk filesystem, with fsync. PGlite starts PostgreSQL with fsync off (`-F`),
 * and its Emscripten NODEFS has no fsync of its own (the call returns without reaching the
 * kernel; fdatasync does not even reach the filesystem layer): a commit then survives kill
 * -9, since the kernel still holds the written pages, but not a power cut or a kernel
 * crash. Here a file's fsync is the kernel's fsync. With fsync on and
 * `wal_sync_method=fsync` (see {@link PGLITE_START_PARAMS}), a commit's WAL is on disk
 * before the commit returns, and checkpoints sync the data files, as with a PostgreSQL
 * server. A failed fsync stops the process (see {@link stopOnSyncFailure}).
 */
export class DurableNodeFS extends NodeFS {
  /**
   * `sync` syncs one open file (the kernel's fsync; tests watch which files it gets);
   * `onFailure` hears a sync that failed, before PostgreSQL does.
   */
  constructor(
    dataDir: string,
    private readonly sync: (fd: number, path: string) => void = (fd) =>
      fsyncSync(fd),
    private readonly onFailure: (e: unknown, path: string) => void =
      stopOnSyncFailure,
    /**
     * Takes WAL syncs off the engine's thread (group commit; wal_flusher.ts): then
     * statements must wait for its flush before they return, as PGliteDialect does.
     */
    private readonly wal?: WalFlusher,
  ) {
    super(dataDir);
  }

  override async init(
    pg: PGlite,
    opts: Partial<PostgresMod>,
  ): Promise<{ emscriptenOpts: Partial<PostgresMod> }> {
    const { emscriptenOpts } = await super.init(pg, opts);
    const { sync, onFailure, wal } = this;
    return {
      emscriptenOpts: {
        ...emscriptenOpts,
        preRun: [
          ...(emscriptenOpts.preRun ?? []),
          (mod) => {
            const { NODEFS } = mod as unknown as NodeFsInternals;
            const ops = NODEFS.stream_ops;
            if (wal) {
              // WAL before data, as PostgreSQL's XLogFlush keeps it: no data file is
              // written while WAL written before it may not be on disk, nor a WAL file
              // closed with its sync still owed.
              const write = ops.write;
              ops.write = (stream, ...rest) => {
                if (!isWal(stream.path ?? "")) {
                  NODEFS.tryFSOperation(() => wal.syncNow("write"));
                }
                return write.call(ops, stream, ...rest);
              };
              const close = ops.close;
              ops.close = (stream) => {
                if (stream.nfd !== undefined && wal.owes(stream.nfd)) {
                  NODEFS.tryFSOperation(() => wal.syncNow("close"));
                }
                close.call(ops, stream);
              };
            }
            // Every NODEFS file shares this one table of operations.
            ops.fsync = (stream) => {
              if (stream.nfd === undefined) return 0;
              const path = stream.path ?? "";
              // A WAL file's sync is owed, paid before its statement returns. (A data
              // file's needs nothing more: its bytes were written, and so WAL before
              // them synced, by the write hook above.)
              if (wal && isWal(path)) {
                wal.defer(stream.nfd, path);
                return 0;
              }
              NODEFS.tryFSOperation(() => {
                try {
                  sync(stream.nfd!, path);
                } catch (e) {
                  onFailure(e, path);
                  throw e;
                }
              });
              return 0;
            };
          },
        ],
      },
    };
  }
}

/**
 * What a failed fsync does by default: stop the process, with a line saying why.
 * PostgreSQL cannot trust its files after one (its own answer is to crash and recover
 * from the WAL), and PGlite, once its engine has given up, spins on the next statement
 * for good, which would freeze every request of this process. Nothing the failed sync
 * carried was acknowledged; a restart (the supervisor's, or a balancer's other instance
 * meanwhile) recovers from the WAL.
 */
export function stopOnSyncFailure(e: unknown, path: string): never {
  jsonLogger.error({
    msg:
      "embedded database could not sync a file; stopping (a restart recovers from its WAL)",
    path,
    error: String(e),
  });
  Deno.exit(70);
}

/**
 * How embedded PostgreSQL starts: PGlite's own parameters with fsync turned back on, WAL
 * synced with fsync() (the call {@link DurableNodeFS} carries to the disk), and
 * shared_buffers at 16 MB: initdb's 128 MB were zeroed inside WebAssembly at every open,
 * ~0.4 s of the ~0.9 s an open took (16 MB: ~0.5 s in all), and stayed resident. Our rows
 * are small and PGlite's files are read through the OS page cache anyway (db_bench: the
 * same key lookup and insert rates).
 */
export const PGLITE_START_PARAMS: readonly string[] = [
  ...PGlite.defaultStartParams,
  // After PGlite's `-F` (fsync off), so this one counts.
  "-c",
  "fsync=on",
  "-c",
  "wal_sync_method=fsync",
  "-c",
  "shared_buffers=16MB",
];
