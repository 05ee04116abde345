import { answersOk, waitUntilAsync } from "./helpers.ts";
import { freePort } from "./pg_cluster.ts";

/**
 * nginx on 127.0.0.1 at a free port, in a temp prefix of its own: `servers` is the body of
 * its `http` block after the temp paths (upstreams and `server` blocks; `listen` with the
 * `LISTEN` placeholder). Resolves once `/healthz` answers through it.
 */
export async function startNginx(
  servers: string,
  opts: { errorLevel?: "debug" | "info" | "error" } = {},
) {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-nginx-" });
  const port = freePort();
  const write = (servers: string) =>
    Deno.writeTextFile(
      `${dir}/nginx.conf`,
      // The test's data dirs are private temp folders: as root, the workers read them as
      // root too (a deployment's nginx reads a shared volume as its own user).
      `${Deno.uid() === 0 ? "user root;\n" : ""}pid ${dir}/nginx.pid;
error_log ${dir}/error.log ${opts.errorLevel ?? "error"};
events {}
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
${servers.replaceAll("LISTEN", `127.0.0.1:${port}`)}
}
`,
    );
  await write(servers);
  const proc = new Deno.Command("nginx", {
    args: ["-p", dir, "-c", `${dir}/nginx.conf`, "-g", "daemon off;"],
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const base = `http://127.0.0.1:${port}`;
  await waitUntilAsync(() => answersOk(`${base}/healthz`), 10_000, 100);
  return {
    base,
    /**
     * Rewrites the `http` body and reloads (SIGHUP): new workers take the new
     * configuration, old ones finish the requests they hold, as `nginx -s reload` does.
     */
    async reload(next: string) {
      await write(next);
      proc.kill("SIGHUP");
      await new Promise((r) => setTimeout(r, 500));
    },
    /** nginx's error log so far (connection events too at errorLevel "info"). */
    errorLog(): Promise<string> {
      return Deno.readTextFile(`${dir}/error.log`).catch(() => "");
    },
    async close() {
      proc.kill("SIGTERM");
      await proc.status;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
