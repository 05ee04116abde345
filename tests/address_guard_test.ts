import assert from "node:assert/strict";
import {
  isAllowedTarget,
  isPublicAddress,
} from "../services/net/address_guard.ts";
import { parseAllowList } from "../schemas/allow_list.ts";
import { test } from "./helpers.ts";

// Pure classification: nothing here opens a connection.
test("private, loopback, link-local, CGNAT, multicast and reserved IPv4 addresses are not public", () => {
  for (
    const ip of [
      "0.0.0.0",
      "10.1.2.3",
      "100.64.0.1",
      "100.127.255.254",
      "127.0.0.1",
      "127.255.255.255",
      "169.254.169.254",
      "172.16.0.1",
      "172.31.255.255",
      "192.0.0.8",
      "192.0.2.1",
      "192.168.1.1",
      "198.18.0.1",
      "198.51.100.7",
      "203.0.113.9",
      "224.0.0.1",
      "239.255.255.250",
      "240.0.0.1",
      "255.255.255.255",
    ]
  ) assert.equal(isPublicAddress(ip), false, ip);
});

test("ordinary public IPv4 addresses are public, including the edges of blocked ranges", () => {
  for (
    const ip of [
      "1.1.1.1",
      "8.8.8.8",
      "93.184.216.34",
      "172.15.255.255",
      "172.32.0.0",
      "100.63.255.255",
      "100.128.0.0",
      "11.0.0.1",
    ]
  ) {
    assert.equal(isPublicAddress(ip), true, ip);
  }
});

test("IPv6 loopback, unspecified, ULA, link-local, multicast, documentation and mapped private IPv4 are not public", () => {
  for (
    const ip of [
      "::1",
      "::",
      "fc00::1",
      "fd12:3456::1",
      "fe80::1",
      "fe80::1%eth0",
      "ff02::1",
      "2001:db8::1",
      "::ffff:127.0.0.1",
      "::ffff:10.0.0.1",
      "::ffff:7f00:1",
      "::ffff:169.254.169.254",
      "64:ff9b::10.0.0.1",
      "2002:0a00:0001::1",
      "[::1]",
    ]
  ) assert.equal(isPublicAddress(ip), false, ip);
});

test("global IPv6 and mapped public IPv4 are public; names and garbage are not", () => {
  for (
    const ip of [
      "2606:4700:4700::1111",
      "2a00:1450:4001:80b::200e",
      "::ffff:8.8.8.8",
    ]
  ) {
    assert.equal(isPublicAddress(ip), true, ip);
  }
  for (const s of ["localhost", "example.com", "", "1.2.3", "999.1.1.1"]) {
    assert.equal(isPublicAddress(s), false, s);
  }
});

test("the allow list admits only the named loopback ports or CIDRs", () => {
  const rules = parseAllowList(
    "127.0.0.1:8080, localhost:9000, 127.0.0.0/30, ::1/128",
  );
  assert.equal(isAllowedTarget("127.0.0.1", 8080, rules), true);
  assert.equal(isAllowedTarget("127.0.0.5", 8080, rules), false);
  assert.equal(isAllowedTarget("127.0.0.1", 9000, rules), true); // via localhost:9000
  assert.equal(isAllowedTarget("127.0.0.3", 1, rules), true); // via the /30
  assert.equal(isAllowedTarget("127.0.0.4", 1, rules), false);
  assert.equal(isAllowedTarget("::1", 5, rules), true);
  assert.equal(isAllowedTarget("10.0.0.1", 8080, rules), false);
  assert.equal(isAllowedTarget("8.8.8.8", 443, []), true);
  assert.equal(isAllowedTarget("127.0.0.1", 8080, []), false);
  assert.throws(() => parseAllowList("nonsense"), /FETCH_ALLOW_PRIVATE/);
});

test("the ad blocking patterns match ad and tracker hosts with their subdomains, and only those", async () => {
  const { adBlockPatterns } = await import(
    "../services/screenshots/page_cleanup.ts"
  );
  // Deno's URLPattern follows the same standard as Chromium's matcher.
  const patterns = adBlockPatterns().map((p) => {
    assert.equal(p.block, true);
    return new URLPattern(p.urlPattern);
  });
  const blocked = (u: string) => patterns.some((p) => p.test(u));
  for (
    const u of [
      "https://securepubads.g.doubleclick.net/tag/js/gpt.js",
      "https://pagead2.googlesyndication.com/x.js",
      "http://www.google-analytics.com/analytics.js",
      "https://cdn.taboola.com/libtrc/x.js",
      "https://doubleclick.net:8443/x",
      "wss://criteo.com/socket",
    ]
  ) {
    assert.equal(blocked(u), true, u);
  }
  for (
    const u of [
      "https://example.com/ads.js",
      "https://notdoubleclick.net/",
      "https://doubleclick.net.evil.example/",
      "https://example.com/?u=https://doubleclick.net/",
    ]
  ) {
    assert.equal(blocked(u), false, u);
  }
});
