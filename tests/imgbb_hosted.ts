/**
 * The two npm ImgBB clients whose address is fixed (`https://api.imgbb.com`), run as their
 * users run them, against this service. tests/imgbb_clients_test.ts starts this script in
 * a network namespace of its own (loopback only, so nothing can leave the machine) whose
 * /etc/hosts names api.imgbb.com 127.0.0.1, with a certificate for that name signed by a
 * CA made for the test (trusted through DENO_CERT). Prints one JSON line of results.
 *
 * Usage: imgbb_hosted.ts <cert.pem> <key.pem>
 */
import { Buffer } from "node:buffer";
import imgbbUploader from "imgbb-uploader";
import { imgbbUpload } from "imgbb-image-uploader";
import { testEnv, userWithKey } from "./helpers.ts";
import { makeImage } from "./fixtures.ts";

const [certFile, keyFile] = Deno.args;
const env = await testEnv();
const server = Deno.serve({
  hostname: "127.0.0.1",
  port: 443,
  cert: await Deno.readTextFile(certFile),
  key: await Deno.readTextFile(keyFile),
  onListen() {},
}, env.app.fetch);

/** What one client printed, and whether its URL answers the bytes uploaded. */
type Result = { url?: string; sameBytes: boolean; error?: string };

/** Fetches a printed URL's path from the app and compares it with what was sent. */
async function check(url: string | undefined, sent: Uint8Array) {
  if (!url) return false;
  const res = await env.app.request(new URL(url).pathname);
  const got = new Uint8Array(await res.arrayBuffer());
  return res.status === 200 && Buffer.from(got).equals(Buffer.from(sent));
}

const results: Record<string, Result[]> = {
  "imgbb-uploader": [],
  "imgbb-image-uploader": [],
};
try {
  const { key } = await userWithKey(env);
  for (let i = 0; i < 5; i++) {
    const png = await makeImage("png", { width: 50 + i, height: 20 });
    try {
      // ImgBB mode: no cheveretoHost, so it posts to https://api.imgbb.com/1/upload?key=…
      const data = await imgbbUploader({
        apiKey: key,
        base64string: Buffer.from(png).toString("base64"),
        name: `shot-${i}`,
      }) as { url?: string };
      results["imgbb-uploader"].push({
        url: data.url,
        sameBytes: await check(data.url, png),
      });
    } catch (e) {
      results["imgbb-uploader"].push({ sameBytes: false, error: String(e) });
    }
  }
  for (let i = 0; i < 3; i++) {
    const png = await makeImage("png", { width: 60 + i, height: 25 });
    try {
      // Its type for `image` is a File, which it appends to a multipart body.
      const answer = await imgbbUpload({
        key,
        image: new File([png as Uint8Array<ArrayBuffer>], `photo-${i}.png`, {
          type: "image/png",
        }),
      }) as { data?: { url?: string } };
      results["imgbb-image-uploader"].push({
        url: answer.data?.url,
        sameBytes: await check(answer.data?.url, png),
      });
    } catch (e) {
      results["imgbb-image-uploader"].push({
        sameBytes: false,
        error: String(e),
      });
    }
  }
} finally {
  await server.shutdown();
  await env.close();
}
console.log(JSON.stringify(results));
