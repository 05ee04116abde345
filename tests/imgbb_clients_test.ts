import assert from "node:assert/strict";
import { test } from "./helpers.ts";

const here = new URL(".", import.meta.url).pathname;

/** Runs a command and returns its stdout; throws with its stderr when it fails. */
async function run(
  cmd: string,
  args: string[],
  opts: Deno.CommandOptions = {},
) {
  const out = await new Deno.Command(cmd, {
    args,
    stdout: "piped",
    stderr: "piped",
    ...opts,
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(
      `${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`,
    );
  }
  return text;
}

/** A CA, and a certificate for api.imgbb.com signed by it, in a new folder. */
async function fixtureCertificates() {
  const dir = await Deno.makeTempDir();
  const o = (...args: string[]) => run("openssl", args, { cwd: dir });
  await o(
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "2",
    "-subj",
    "/CN=imagehost test CA",
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
  );
  await o(
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    "/CN=api.imgbb.com",
    "-keyout",
    "leaf.key",
    "-out",
    "leaf.csr",
  );
  await Deno.writeTextFile(
    `${dir}/ext.cnf`,
    "subjectAltName=DNS:api.imgbb.com\nextendedKeyUsage=serverAuth\n",
  );
  await o(
    "x509",
    "-req",
    "-in",
    "leaf.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    "ext.cnf",
    "-out",
    "leaf.pem",
  );
  return dir;
}

test("the ImgBB clients whose address is fixed (imgbb-uploader's ImgBB mode 5 of 5, imgbb-image-uploader 3 of 3), installed from npm, upload to this service when api.imgbb.com names it, and each URL they print serves the bytes", async () => {
  const dir = await fixtureCertificates();
  try {
    // The clients' own host name, answered by a hosts file in a network namespace that
    // has only loopback: no lookup or packet can leave the machine.
    await Deno.writeTextFile(
      `${dir}/hosts`,
      "127.0.0.1 localhost api.imgbb.com\n::1 localhost\n",
    );
    await Deno.writeTextFile(`${dir}/resolv.conf`, "nameserver 127.0.0.1\n");
    const script = [
      "set -e",
      "ip link set lo up",
      `mount --bind ${dir}/hosts /etc/hosts`,
      `mount --bind ${dir}/resolv.conf /etc/resolv.conf`,
      `exec "${Deno.execPath()}" run -A "${here}imgbb_hosted.ts" ${dir}/leaf.pem ${dir}/leaf.key`,
    ].join("\n");
    const out = await run(
      "unshare",
      ["--net", "--mount", "--fork", "bash", "-c", script],
      {
        // The test CA: fetch trusts DENO_CERT, node:https NODE_EXTRA_CA_CERTS.
        env: {
          DENO_CERT: `${dir}/ca.pem`,
          NODE_EXTRA_CA_CERTS: `${dir}/ca.pem`,
        },
      },
    );
    const results = JSON.parse(out.trim().split("\n").at(-1)!) as Record<
      string,
      { url?: string; sameBytes: boolean; error?: string }[]
    >;
    const tally = (name: string) =>
      results[name].filter((r) => r.sameBytes).length;
    assert.equal(tally("imgbb-uploader"), 5, JSON.stringify(results));
    assert.equal(tally("imgbb-image-uploader"), 3, JSON.stringify(results));
    for (const r of Object.values(results).flat()) {
      assert.match(r.url!, /^http:\/\/localhost:8080\/[\w-]+\.png$/);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
