import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { Page } from "puppeteer-core";
import { ApiError } from "../schemas/errors.ts";
import type { GuardProxy } from "../services/net/guard_proxy.ts";
import { loadPage, networkChanged } from "../services/screenshots/page_load.ts";
import { test } from "./helpers.ts";

/**
 * A page whose navigations go as `outcomes` say, one per goto: "changed" fails the way
 * Chromium fails a load cut by a change of the machine's network (the main request's
 * `requestfailed` with net::ERR_NETWORK_CHANGED, and goto rejecting with it), "refused"
 * as a refused connection does, "ok" loads. Only what loadPage reads of a Page exists.
 */
function scriptedPage(outcomes: ("changed" | "refused" | "ok")[]) {
  const events = new EventEmitter();
  const frame = {};
  const gotos: string[] = [];
  const request = (url: string, failure?: string) => ({
    url: () => url,
    frame: () => frame,
    isNavigationRequest: () => true,
    failure: () => failure ? { errorText: failure } : null,
  });
  let current = "about:blank";
  const page = {
    mainFrame: () => frame,
    on: (name: string, f: (...a: unknown[]) => void) => events.on(name, f),
    off: (name: string, f: (...a: unknown[]) => void) => events.off(name, f),
    url: () => current,
    isClosed: () => false,
    browser: () => ({ connected: true }),
    evaluate: () => Promise.resolve(-1),
    goto: (url: string) => {
      gotos.push(url);
      const outcome = outcomes.shift() ?? "ok";
      return new Promise((resolve, reject) =>
        setTimeout(() => {
          events.emit("request", request(url));
          if (outcome === "ok") {
            current = url;
            const req = request(url);
            events.emit("response", {
              url: () => url,
              request: () => req,
              status: () => 200,
              headers: () => ({}),
            });
            events.emit("load");
            return resolve(null);
          }
          const text = outcome === "changed"
            ? "net::ERR_NETWORK_CHANGED"
            : "net::ERR_CONNECTION_REFUSED";
          events.emit("requestfailed", request(url, text));
          reject(new Error(`${text} at ${url}`));
        }, 5)
      );
    },
  };
  return { page: page as unknown as Page, gotos };
}

const guard = { events: [] } as unknown as GuardProxy;

test("a page load cut by a change of the machine's network is loaded once more within the capture's deadline; a second cut, or any other failure, is the page's 220", async () => {
  const url = "http://fixture.test/";
  const once = scriptedPage(["changed", "ok"]);
  const loaded = await loadPage(once.page, url, guard, Date.now() + 5000);
  assert.deepEqual(loaded, { status: 200, url });
  assert.deepEqual(once.gotos, [url, url]);

  const twice = scriptedPage(["changed", "changed", "ok"]);
  await assert.rejects(
    loadPage(twice.page, url, guard, Date.now() + 5000),
    (e) => networkChanged(e),
  );
  assert.equal(twice.gotos.length, 2, "at most one more try");

  const refused = scriptedPage(["refused", "ok"]);
  await assert.rejects(
    loadPage(refused.page, url, guard, Date.now() + 5000),
    (e) =>
      e instanceof ApiError && e.code === 220 && !networkChanged(e) &&
      /ERR_CONNECTION_REFUSED/.test(e.details![0].message),
  );
  assert.equal(refused.gotos.length, 1, "a refused page is not asked twice");

  // Past the deadline there is no second try.
  const late = scriptedPage(["changed", "ok"]);
  await assert.rejects(loadPage(late.page, url, guard, Date.now() + 3));
  assert.equal(late.gotos.length, 1);
});

test("only a 220 naming net::ERR_NETWORK_CHANGED counts as the machine's network changing", () => {
  const with_ = (code: 220 | 230, message: string) =>
    new ApiError(code, { details: [{ message }] });
  assert.equal(networkChanged(with_(220, "net::ERR_NETWORK_CHANGED")), true);
  assert.equal(networkChanged(with_(220, "net::ERR_CONNECTION_RESET")), false);
  assert.equal(networkChanged(with_(230, "net::ERR_NETWORK_CHANGED")), false);
  assert.equal(networkChanged(new ApiError(220)), false);
  assert.equal(networkChanged(new Error("net::ERR_NETWORK_CHANGED")), false);
});
