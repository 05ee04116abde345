import type { Logger } from "../services/runtime/logger.ts";

/** Methods the Request constructor refuses (the fetch standard's forbidden methods). */
const FORBIDDEN_METHODS = new Set(["CONNECT", "TRACE", "TRACK"]);

/** A fetch handler as Deno.serve calls it. */
export type FetchHandler = (
  req: Request,
  info: Deno.ServeHandlerInfo<Deno.NetAddr>,
) => Response | Promise<Response>;

/**
 * Where the process is in its life, shared by main.ts (which drains and stops the server on
 * SIGTERM) and the app (which reports the drain on /readyz and asks clients to close their
 * kept-alive connections meanwhile).
 *
 * It also counts request bodies still being received. Deno 2.9's `server.shutdown()` makes
 * the body of every in-flight request unreadable at once (denoland/deno#36809: an upload
 * being received at that moment is cut and answered 400), so main.ts calls it only at an
 * instant when no body is being read.
 */
export class Lifecycle {
  #draining = false;
  #reading = 0;
  #idle: (() => void)[] = [];

  /** True from SIGTERM on: the instance still serves, but asks to be taken out of rotation. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Request bodies that are still arriving. */
  get bodiesInFlight(): number {
    return this.#reading;
  }

  /** Starts the drain; it cannot be undone (the process is on its way out). */
  startDrain(): void {
    this.#draining = true;
  }

  /**
   * Wraps the server's handler so that every request body is counted while it arrives: until
   * it ends, fails or is cancelled, or the handler has answered (a body the handler did not
   * read is dropped by the server then). Requests without a body pass through untouched.
   */
  track(handler: FetchHandler): FetchHandler {
    return (req, info) => {
      // No body, or a method a Request may not be made with (TRACE: the copy below would
      // throw "Method is forbidden", a plain-text 500): passed on as it is; the app
      // answers such methods 405 without reading anything.
      if (!req.body || FORBIDDEN_METHODS.has(req.method)) {
        return handler(req, info);
      }
      this.#reading++;
      let counted = true;
      const done = () => {
        if (!counted) return;
        counted = false;
        if (--this.#reading === 0) {
          for (const wake of this.#idle.splice(0)) wake();
        }
      };
      const body = req.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          flush: done,
          cancel: done,
        }),
      );
      // Built from its parts, not from `req`: copying a served request reads its signal,
      // which makes Deno print a warning about that signal's legacy abort at every start.
      const counting = new Request(req.url, {
        method: req.method,
        headers: req.headers,
        body,
        duplex: "half",
      } as RequestInit);
      let answer: Response | Promise<Response>;
      try {
        answer = handler(counting, info);
      } catch (e) {
        done();
        throw e;
      }
      return Promise.resolve(answer).finally(done);
    };
  }

  /**
   * Resolves true at the first instant no request body is arriving (synchronously with the
   * last one ending, so the caller can stop the server before another starts), or false
   * after `ms`.
   */
  whenNoBodyInFlight(ms: number): Promise<boolean> {
    if (this.#reading === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#idle = this.#idle.filter((w) => w !== wake);
        resolve(false);
      }, ms);
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.#idle.push(wake);
    });
  }
}

/**
 * Stops a server the way SIGTERM should: drain for `drainMs` (still serving; /readyz 503 and
 * `Connection: close` on every answer, so a balancer moves its traffic and drops its idle
 * connections to us), then stop accepting at an instant when no request body is arriving,
 * then give in-flight requests what is left of `graceMs`. True when everything finished.
 */
export async function drainAndStop(
  server: Deno.HttpServer,
  lifecycle: Lifecycle,
  opts: { drainMs: number; graceMs: number; log: Logger },
): Promise<boolean> {
  lifecycle.startDrain();
  if (opts.drainMs) await new Promise((r) => setTimeout(r, opts.drainMs));
  const deadline = Date.now() + opts.graceMs;
  if (!await lifecycle.whenNoBodyInFlight(opts.graceMs)) {
    opts.log.error({ msg: "uploads still arriving; cutting them" });
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const drained = await Promise.race([
    server.shutdown().then(() => true),
    new Promise<boolean>((r) =>
      timer = setTimeout(() => r(false), Math.max(0, deadline - Date.now()))
    ),
  ]);
  clearTimeout(timer);
  if (!drained) {
    opts.log.error({ msg: "grace period over; cutting remaining requests" });
  }
  return drained;
}
