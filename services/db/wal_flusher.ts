import { fsync, fsyncSync } from "node:fs";

/**
 * Group commit for embedded PGlite. PostgreSQL syncs its WAL at every commit, and in
 * PGlite that sync runs on the thread that runs the engine (the service's main thread):
 * at 8 clients uploading 200 KB each, 1.3 ms of every upload's 7 ms of main thread was
 * spent blocked in that fsync (a CPU profile), and without it the uploads ran 12 % faster.
 *
 * So a WAL file's sync is deferred: PostgreSQL's call returns at once, the file is
 * marked, and the statement that made the call does not return to its caller until
 * {@link WalFlusher.flush} has synced it on a thread of the runtime's pool. One sync
 * covers every commit written before it began, so concurrent commits share syncs.
 *
 * Nothing acknowledged may be lost, and PostgreSQL's own rule holds: no data file is
 * written, nor a WAL file closed, while WAL written before it is not yet on disk
 * ({@link WalFlusher.syncNow} runs first, on the engine's thread, as PostgreSQL's
 * XLogFlush before a buffer write would). A commit is acknowledged (its statement
 * resolves) only after its WAL is on disk: durability is as before, and a kill -9 loses
 * nothing either way (the kernel holds what was written).
 */
export class WalFlusher {
  /** WAL files PostgreSQL asked to sync that no sync has started on since. */
  #dirty = new Map<number, string>();
  /** WAL files a sync is running on now. */
  #inFlight = new Map<number, string>();
  /** The sync running now. */
  #current?: Promise<void>;
  /** The sync queued after it, shared by every caller until it starts. */
  #next?: Promise<void>;
  /** How many syncs were deferred in all: a statement that moved it must wait a flush. */
  deferred = 0;
  /**
   * How many times the engine's thread had to sync owed WAL itself, by what it was about
   * to do (tests, diagnostics).
   */
  readonly syncedNow = { write: 0, close: 0 };

  constructor(
    /** Syncs one file off the engine's thread. */
    private readonly syncLater: (fd: number) => Promise<void> = (fd) =>
      new Promise((resolve, reject) =>
        fsync(fd, (e) => e ? reject(e) : resolve())
      ),
    /** Syncs one file now (the engine's thread waits). */
    private readonly syncOnThread: (fd: number, path: string) => void = (fd) =>
      fsyncSync(fd),
    /** Hears a sync that failed (the default stops the process; durable_node_fs.ts). */
    private readonly onFailure: (e: unknown, path: string) => void = () => {},
  ) {}

  /** PostgreSQL asked to sync this WAL file: later, before the statement returns. */
  defer(fd: number, path: string): void {
    this.#dirty.set(fd, path);
    this.deferred++;
  }

  /** How many WAL files a sync is owed (or running) for. */
  get owed(): number {
    return new Set([...this.#dirty.keys(), ...this.#inFlight.keys()]).size;
  }

  /** Whether a WAL sync is owed (or running) for this file. */
  owes(fd: number): boolean {
    return this.#dirty.has(fd) || this.#inFlight.has(fd);
  }

  /**
   * Syncs every WAL file owed, on this thread, now: before a data file is written or a
   * WAL file closed. (A background sync still running on one of them is
   * harmless: it syncs what is already on disk.)
   */
  syncNow(before: "write" | "close"): void {
    if (this.#dirty.size === 0 && this.#inFlight.size === 0) return;
    const owed = new Map([...this.#inFlight, ...this.#dirty]);
    this.#dirty.clear();
    this.#inFlight.clear();
    this.syncedNow[before]++;
    for (const [fd, path] of owed) {
      try {
        this.syncOnThread(fd, path);
      } catch (e) {
        this.onFailure(e, path);
        throw e;
      }
    }
  }

  /** Resolves once every WAL sync deferred before this call is on disk. */
  flush(): Promise<void> {
    // Nothing new: whatever was deferred before is in the sync running now, if any.
    if (this.#dirty.size === 0) return this.#current ?? Promise.resolve();
    this.#next ??= this.#after(this.#current);
    return this.#next;
  }

  async #after(previous: Promise<void> | undefined): Promise<void> {
    await previous?.catch(() => {});
    this.#next = undefined;
    const files = [...this.#dirty];
    this.#dirty.clear();
    for (const [fd, path] of files) this.#inFlight.set(fd, path);
    const run = Promise.all(files.map(async ([fd, path]) => {
      try {
        await this.syncLater(fd);
      } catch (e) {
        this.onFailure(e, path);
        throw e;
      } finally {
        this.#inFlight.delete(fd);
      }
    })).then(() => {});
    this.#current = run;
    try {
      await run;
    } finally {
      if (this.#current === run) this.#current = undefined;
    }
  }
}
