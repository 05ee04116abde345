/** Runs a command, failing the test with its output when it fails. */
export async function sh(cmd: string, ...args: string[]) {
  const out = await new Deno.Command(cmd, {
    args,
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  if (!out.success) {
    throw new Error(
      `${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`,
    );
  }
}

/**
 * "Another host" on this machine: a network namespace of the test's own, linked to this
 * one by a veth pair on a /30 of 10.231.x.0 that exists only here. Only the two ends of
 * the link reach each other; `destroy` removes both.
 */
export async function linkedNamespace() {
  const tag = crypto.randomUUID().slice(0, 6);
  const ns = `ihb${tag}`;
  const hostIf = `ihh${tag}`;
  const nsIf = `ihn${tag}`;
  const octet = 16 + Math.floor(Math.random() * 200);
  const hostIp = `10.231.${octet}.1`;
  const nsIp = `10.231.${octet}.2`;
  const destroy = async () => {
    await sh("ip", "netns", "del", ns).catch(() => {});
    await sh("ip", "link", "del", hostIf).catch(() => {});
  };
  await sh("ip", "netns", "add", ns);
  try {
    await sh("ip", "link", "add", hostIf, "type", "veth", "peer", "name", nsIf);
    await sh("ip", "link", "set", nsIf, "netns", ns);
    await sh("ip", "addr", "add", `${hostIp}/30`, "dev", hostIf);
    await sh("ip", "link", "set", hostIf, "up");
    const inNs = (...args: string[]) => sh("ip", "netns", "exec", ns, ...args);
    await inNs("ip", "addr", "add", `${nsIp}/30`, "dev", nsIf);
    await inNs("ip", "link", "set", nsIf, "up");
    await inNs("ip", "link", "set", "lo", "up");
  } catch (e) {
    await destroy();
    throw e;
  }
  return { ns, hostIp, nsIp, destroy };
}
