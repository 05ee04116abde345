import { S3Store } from "../services/store/s3_store.ts";
import { freePort } from "./pg_cluster.ts";

/**
 * A local S3-compatible server (the npm package s3rver) on loopback with one bucket. It runs
 * under Node in its own process, as a real S3 endpoint would be: in-process it shared the
 * test runner's threads with other test workers and stalled under load. `stop` and `start`
 * play an outage: the same port and the same data come back.
 */
export async function startS3(
  opts: { partSize?: number; timeoutMs?: number } = {},
) {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-s3-" });
  const port = freePort();
  // Installed by `deno install` (deno.json lists it) into node_modules for Node to run.
  const bin =
    new URL("../node_modules/s3rver/bin/s3rver.js", import.meta.url).pathname;
  let proc: Deno.ChildProcess | undefined;
  const start = async () => {
    const p = new Deno.Command("node", {
      args: [
        bin,
        "-d",
        dir,
        "-a",
        "127.0.0.1",
        "-p",
        String(port),
        "--configure-bucket",
        "images",
      ],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const reader = p.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    while (!/listening/i.test(out)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`s3rver did not start: ${out}`);
      out += value;
    }
    reader.releaseLock();
    p.stdout.cancel().catch(() => {});
    proc = p;
  };
  const stop = async () => {
    const p = proc;
    proc = undefined;
    if (!p) return;
    p.kill("SIGTERM");
    await p.status;
  };
  await start();
  const endpoint = `http://127.0.0.1:${port}`;
  const store = new S3Store({
    endpoint,
    bucket: "images",
    region: "us-east-1",
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
    ...opts,
  });
  return {
    store,
    endpoint,
    /** The service's environment for this server's one bucket (STORE=s3). */
    env: {
      STORE: "s3",
      S3_ENDPOINT: endpoint,
      S3_BUCKET: "images",
      S3_ACCESS_KEY_ID: "S3RVER",
      S3_SECRET_ACCESS_KEY: "S3RVER",
    },
    start,
    stop,
    async close() {
      await stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
