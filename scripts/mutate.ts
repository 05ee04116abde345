/**
 * Mutation check of the critical rules: each entry below puts one deliberate bug into a
 * scratch copy of the repository, runs the tests that should notice, and reports whether
 * they did. Not part of CI (minutes per mutation); run it before trusting a test's name:
 *
 *   deno task mutate            # every mutation
 *   deno task mutate strip      # only those whose name contains "strip"
 *   deno task mutate --check    # only that every entry still matches the code (CI)
 *
 * Prints one line per mutation (caught / SURVIVED) and exits 1 when any survived; an
 * entry whose text is not in its file exactly once is stale, an error of its own (exit 2).
 */

interface Mutation {
  name: string;
  file: string;
  /** Exact text to replace (must occur once). */
  from: string;
  to: string;
  /** Test files that should fail with the bug in place. */
  tests: string[];
}

const MUTATIONS: Mutation[] = [
  {
    name:
      "bodies: a body's key must precede its images (Chevereto's clients and curl -F key last fail)",
    file: "services/bodies/admission.ts",
    from: `    if (this.#hold?.mayWait(total)) return;`,
    to: ``,
    tests: ["tests/key_hold_test.ts"],
  },
  {
    name: "bodies: a keyless body held to its end",
    file: "services/bodies/admission.ts",
    from: `    if (this.#hold?.mayWait(total)) return;`,
    to: `    if (this.#hold) return;`,
    tests: ["tests/key_hold_test.ts", "tests/abuse_test.ts"],
  },
  {
    name: "transforms: any width made unsigned (unbounded variants)",
    file: "services/images/transforms.ts",
    from: `  const listed = (w === undefined || rules.widths.includes(w)) &&`,
    to: `  const listed = true ||`,
    tests: ["tests/transforms_test.ts"],
  },
  {
    name: "transforms: a signature for one image admits another",
    file: "services/images/transforms.ts",
    from: `  return \`\${path}?\${parts.join("&")}\`;`,
    to: `  return \`?\${parts.join("&")}\`;`,
    tests: ["tests/transforms_test.ts"],
  },
  {
    name: "transforms: every instance makes the same variant (no lease)",
    file: "services/images/variant_maker.ts",
    from: `    if (this.shared && !await this.#lease(key, source.id)) {`,
    to: `    if (false) {`,
    tests: ["tests/transforms_test.ts"],
  },
  {
    name: "transforms: a failed make keeps its lease (retries wait it out)",
    file: "services/images/variant_maker.ts",
    from: `    await this.db.deleteFrom("image_variants").where("key", "=", key)
      .where("state", "=", "making").execute().catch(() => {});`,
    to: ``,
    tests: ["tests/transforms_test.ts"],
  },
  {
    name: "uploads: the check decodes leniently (a cut JPEG is acknowledged)",
    file: "services/images/pipeline_stages.ts",
    from: `      failOn: "error",`,
    to: `      failOn: "none",`,
    tests: ["tests/upload_test.ts", "tests/hostile_images_test.ts"],
  },
  {
    name:
      "uploads: a refused file's stored original stays (bytes without a row)",
    file: "services/images/pipeline.ts",
    from: `        await unkeep();`,
    to: ``,
    tests: ["tests/upload_test.ts", "tests/fixed_variants_test.ts"],
  },
  {
    name: "fixed variants: the fast path vouches for a medium never made",
    file: "routes/host.ts",
    from: `    if (!fresh && name.field !== "ext" && !fixed.has(name.key)) {`,
    to: `    if (false) {`,
    tests: ["tests/fixed_variants_test.ts"],
  },
  {
    name: "fixed variants: an empty file a crash left is served as the variant",
    file: "routes/host.ts",
    from: `      if (!blob?.size) throw new ApiError(404);`,
    to: `      if (!blob) throw new ApiError(404);`,
    tests: ["tests/fixed_variants_test.ts"],
  },
  {
    name: "fixed variants: made without the original's orientation",
    file: "services/images/variant_maker.ts",
    from:
      `      let img = sharp(input, { animated, limitInputPixels: false }).rotate();`,
    to: `      let img = sharp(input, { animated, limitInputPixels: false });`,
    tests: ["tests/fixed_variants_test.ts"],
  },
  {
    name: "memory scratch: a released reservation is never given back",
    file: "services/runtime/scratch_files.ts",
    from: `    this.#held += f.held - Math.max(f.held, f.reserved);`,
    to: ``,
    tests: ["tests/scratch_files_test.ts"],
  },
  {
    name: "albums: someone else's album read, changed and deleted",
    file: "services/albums/albums.ts",
    from: `  if (!row || row.user_id !== userId) throw notFound();`,
    to: `  if (!row) throw notFound();`,
    tests: ["tests/albums_test.ts"],
  },
  {
    name: "albums: uploads and edits put images into someone else's album",
    file: "services/albums/albums.ts",
    from: `  if (!row || row.user_id !== userId) {`,
    to: `  if (!row) {`,
    tests: ["tests/albums_test.ts"],
  },
  {
    name: "images: someone else's image edited",
    file: "routes/albums.ts",
    from: `    if (!row || row.user_id !== userId) throw new ApiError(404);`,
    to: `    if (!row) throw new ApiError(404);`,
    tests: ["tests/albums_test.ts"],
  },
  {
    name: "find: someone else's images in the list",
    file: "services/images/records.ts",
    from: `  let q = liveImages(db, clock).where("user_id", "=", userId);`,
    to: `  let q = liveImages(db, clock).where("user_id", "!=", "");`,
    tests: ["tests/image_find_test.ts"],
  },
  {
    name: "find: % and _ in a search word act as wildcards",
    file: "services/images/records.ts",
    from: "`%${likeLiteral(word)}%`",
    to: "`%${word}%`",
    tests: ["tests/image_find_test.ts"],
  },
  {
    name: "site: My images' Move and privacy change someone else's image",
    file: "routes/organise.tsx",
    from: `      if (!row || row.user_id !== r.user.userId) continue;`,
    to: `      if (!row) continue;`,
    tests: ["tests/site_test.ts"],
  },
  {
    name: "site: the viewer's edit form edits someone else's image",
    file: "routes/organise.tsx",
    from:
      `    if (!row || row.user_id !== r.user.userId) throw new ApiError(404);`,
    to: `    if (!row) throw new ApiError(404);`,
    tests: ["tests/site_test.ts"],
  },
  {
    name:
      "privacy: the fast path confirms a private or password file (304 or proxy) to anyone",
    file: "routes/host.ts",
    from: `    if (isRestricted(row.privacy)) return undefined;`,
    to: ``,
    tests: ["tests/privacy_test.ts"],
  },
  {
    name: "privacy: a private or password image's files served to anyone",
    file: "routes/host.ts",
    from: `    if (isRestricted(row.privacy) && !await mayAccess(c, row)) {`,
    to: `    if (isRestricted(row.privacy) && false) {`,
    tests: ["tests/privacy_test.ts"],
  },
  {
    name: "privacy: a private or password image's files cacheable",
    file: "routes/host.ts",
    from: `  if (isRestricted(row.privacy)) return "private, no-store";`,
    to: ``,
    tests: ["tests/privacy_test.ts"],
  },
  {
    name: "password: a signed file URL never expires",
    file: "services/privacy/password_access.ts",
    from: `    if (exp * 1000 <= this.clock.now().getTime()) return false;`,
    to: ``,
    tests: ["tests/privacy_test.ts"],
  },
  {
    name:
      "password: signatures do not cover the password (a new one ends nothing)",
    file: "services/privacy/password_access.ts",
    from:
      "    return await hmac16(await this.#keyOf(), `${kind}:${id}:${exp}:${hash}`);",
    to: "    return await hmac16(await this.#keyOf(), `${kind}:${id}:${exp}`);",
    tests: ["tests/privacy_test.ts"],
  },
  {
    name: "password: signatures do not cover the image (one opens them all)",
    file: "services/privacy/password_access.ts",
    from:
      "    return await hmac16(await this.#keyOf(), `${kind}:${id}:${exp}:${hash}`);",
    to:
      "    return await hmac16(await this.#keyOf(), `${kind}:${exp}:${hash}`);",
    tests: ["tests/privacy_test.ts"],
  },
  {
    name: "password: a password image's page shown without its password",
    file: "routes/viewer.tsx",
    from:
      `    if (locked && !await gate.unlocked(c, item)) return gate.ask(c, item);`,
    to: ``,
    tests: ["tests/privacy_test.ts"],
  },
  {
    name: "password: a password album's page shown without its password",
    file: "routes/album_page.tsx",
    from: `      if (!await gate.unlocked(c, item)) return gate.ask(c, item);`,
    to: ``,
    tests: ["tests/privacy_test.ts"],
  },
  {
    name: "password: any password unlocks",
    file: "routes/pages/password_gate.tsx",
    from: `      await verifyPassword(password, item.hash);`,
    to: `      true;`,
    tests: ["tests/privacy_test.ts"],
  },
  {
    name: "password: attempts are not counted",
    file: "routes/pages/password_gate.tsx",
    from: `      await this.#attempts.count(`,
    to: `      void (`,
    tests: ["tests/privacy_test.ts"],
  },
  {
    name: "password: leaving privacy password keeps the old password",
    file: "services/privacy/password_access.ts",
    from: `    return { privacy, password_hash: null };`,
    to: `    return { privacy };`,
    tests: ["tests/privacy_test.ts"],
  },
  {
    name: "guests: a guest's upload kept for good",
    file: "routes/upload.ts",
    from: `        ? Math.min(asked ?? guestLife, guestLife)`,
    to: `        ? asked`,
    tests: ["tests/guests_test.ts"],
  },
  {
    name: "guests: a guest may send files as large as a keyed user",
    file: "routes/upload.ts",
    from: `      ? Math.min(maxFileBytes, deps.config.GUEST_MAX_FILE_BYTES)`,
    to: `      ? maxFileBytes`,
    tests: ["tests/guests_test.ts"],
  },
  {
    name: "guests: guest uploads are not counted per address",
    file: "routes/api_auth.ts",
    from: `    .count(addressOf(c, deps));`,
    to: `    .check(addressOf(c, deps));`,
    tests: ["tests/guests_test.ts"],
  },
  {
    name: "guests: another site's page may upload as the browser's guest",
    file: "routes/api_auth.ts",
    from: `  refuseForeign(c, deps, "Guest uploads");`,
    to: ``,
    tests: ["tests/guests_test.ts"],
  },
  {
    name: "guests: a guest may call more of the API than uploads",
    file: "routes/api_auth.ts",
    from:
      `  if (c.req.method !== "POST" || !STREAMED_BODY_PATHS.has(c.req.path)) {`,
    to: `  if (false) {`,
    tests: ["tests/guests_test.ts"],
  },
  {
    name: "guests: a claim takes bytes the account already has",
    file: "services/accounts/guests.ts",
    from: `            .whereRef("mine.sha256", "=", "images.sha256"),`,
    to: `            .where(sql\`false\`),`,
    tests: ["tests/guests_test.ts"],
  },
  {
    name: "guests: the sweep retires guests whose images still live",
    file: "services/accounts/guests.ts",
    from: `          .where("images.deleted_at", "is", null)
          .where((eb) =>`,
    to: `          .where("images.deleted_at", "is not", null)
          .where((eb) =>`,
    tests: ["tests/guests_test.ts"],
  },
  {
    name: "guests: signing up claims nothing",
    file: "routes/account.tsx",
    from: `      await claimGuestImages(`,
    to: `      await (async (..._: unknown[]) => 0)(`,
    tests: ["tests/guests_test.ts"],
  },
  {
    name:
      "group commit: a committed statement returns before its WAL is synced",
    file: "services/db/pglite_dialect.ts",
    from: `      await this.wal.flush();`,
    to: ``,
    tests: ["tests/wal_flusher_test.ts"],
  },
  {
    name: "group commit: a flush does not wait for the sync it joined",
    file: "services/db/wal_flusher.ts",
    from: `    this.#next ??= this.#after(this.#current);
    return this.#next;`,
    to: `    this.#next ??= this.#after(this.#current);
    return Promise.resolve();`,
    tests: ["tests/wal_flusher_test.ts"],
  },
  {
    name: "group commit: data files written while WAL is owed",
    file: "services/db/durable_node_fs.ts",
    from:
      `                  NODEFS.tryFSOperation(() => wal.syncNow("write"));`,
    to: ``,
    tests: ["tests/wal_flusher_test.ts"],
  },
  {
    name: "group commit: a WAL segment closed with its sync owed",
    file: "services/db/durable_node_fs.ts",
    from:
      `                  NODEFS.tryFSOperation(() => wal.syncNow("close"));`,
    to: ``,
    tests: ["tests/wal_flusher_test.ts"],
  },
  {
    name: "transforms: a first answer waits for its variant's file and row",
    file: "routes/host.ts",
    from: `    if (proxied || !cached) {`,
    to: `    if (true) {`,
    tests: ["tests/transforms_test.ts"],
  },
  {
    name: "transforms: nginx is sent to a variant file not yet stored",
    file: "routes/host.ts",
    from: `    if (proxied || !cached) {`,
    to: `    if (!cached) {`,
    tests: ["tests/transforms_test.ts"],
  },
  {
    name: "privacy: a private image's viewer page shown to anyone",
    file: "routes/viewer.tsx",
    from: `    if (row.privacy === "private" && !owner && !ownerByKey) {`,
    to: `    if (false) {`,
    tests: ["tests/privacy_test.ts"],
  },
  {
    name: "privacy: a private album's page shown to anyone",
    file: "routes/album_page.tsx",
    from:
      `    if (row.privacy === "private" && !owner) throw new ApiError(404);`,
    to: ``,
    tests: ["tests/privacy_test.ts"],
  },
  {
    name:
      "privacy: an album's page lists unlisted and private images to others",
    file: "services/images/records.ts",
    from: `  if (opts.publicOnly) q = q.where("privacy", "=", "public");`,
    to: ``,
    tests: ["tests/privacy_test.ts"],
  },
  {
    name: "transforms: variants outlive their image's deletion",
    file: "services/images/records.ts",
    from: `  await deleteVariants(db, store, row.id);`,
    to: ``,
    tests: ["tests/transforms_test.ts"],
  },
  {
    name: "bodies: a keyless text body held past its budget",
    file: "services/bodies/key_hold.ts",
    from: `    if (requestTotal > l.perRequest) return "request";`,
    to: ``,
    tests: ["tests/key_hold_test.ts"],
  },
  {
    name: "forms: pages sent with no-referrer (Chromium posts Origin: null)",
    file: "routes/pages/layout.tsx",
    from: `    referrerPolicy: "same-origin",`,
    to: `    referrerPolicy: "no-referrer",`,
    tests: ["tests/site_browser_test.ts"],
  },
  {
    name: "session: a foreign Origin without Sec-Fetch-Site accepted",
    file: "routes/api_auth.ts",
    from:
      `    (origin !== undefined && !ownOrigin(deps.config)(origin, c.req.url));`,
    to:
      `    (origin === "never" && !ownOrigin(deps.config)(origin, c.req.url));`,
    tests: ["tests/site_test.ts"],
  },
  {
    name: "bodies: a keyless multipart waits for a full chunk before admission",
    file: "services/bodies/multipart.ts",
    from: `        () => !admission.admitted,`,
    to: `        () => false,`,
    tests: ["tests/abuse_test.ts"],
  },
  {
    name: "js: a navigation the script starts is not followed",
    file: "services/screenshots/page_load.ts",
    from: `    navigated = true;\n    loading = true;`,
    to: `    loading = true;`,
    tests: ["tests/screenshot_options_test.ts"],
  },
  {
    name: "profile: no writable disk, yet uploads received on disk",
    file: "server/profile.ts",
    from:
      `  return { ...config, SCRATCH: can.writeDataDir ? "disk" : "memory" };`,
    to: `  return { ...config, SCRATCH: "disk" };`,
    tests: ["tests/profile_test.ts"],
  },
  {
    name: "memory scratch: a file's growth slack never given back",
    file: "services/runtime/scratch_files.ts",
    from: `      memory.give(room, e.folder);`,
    to: `      memory.give(0, e.folder);`,
    tests: ["tests/scratch_files_test.ts"],
  },
  {
    name: "sweep: rows of uploads still in flight judged as missing bytes",
    file: "services/images/orphans.ts",
    from:
      `      .where("created_at", "<=", new Date(now - opts.graceS * 1000))\n`,
    to: ``,
    tests: ["tests/orphans_test.ts"],
  },
  {
    name: "bodies: a body read whole is not bounded",
    file: "routes/body_limit.ts",
    from: `    maxSize: maxKb * 1024,`,
    to: `    maxSize: maxKb * 1024 * 1024,`,
    tests: ["tests/abuse_test.ts"],
  },
  {
    name: "hiding: link and button text counted as consent prose",
    file: "services/screenshots/page_cleanup.ts",
    from: `    const raw = proseOf(el);`,
    to: `    const raw = el.innerText || "";`,
    tests: ["tests/screenshot_hiding_test.ts"],
  },
  {
    name: "duplicates: a record without its bytes still answers",
    file: "services/images/pipeline.ts",
    from: `    if (!(await store.stat(blobKeys(row).original))) {`,
    to: `    if (!(await store.stat(blobKeys(row).original)) && false) {`,
    tests: ["tests/orphans_test.ts"],
  },
  {
    name: "sweep: rows without bytes kept",
    file: "services/images/orphans.ts",
    from: `      if (await store.stat(blobKeys(row).original)) continue;`,
    to: `      if (await store.stat(blobKeys(row).original) || true) continue;`,
    tests: ["tests/orphans_test.ts"],
  },
  {
    name: "browser service: any token accepted",
    file: "services/screenshots/browser_gateway.ts",
    from: `      if (!safeEqual(given, expected)) {`,
    to: `      if (!given) {`,
    tests: ["tests/browser_gateway_test.ts"],
  },
  {
    name: "memory scratch: the process budget ignored",
    file: "services/runtime/scratch_files.ts",
    from: `    if (grow > 0 && this.#held + grow > this.budget) {`,
    to: `    if (grow > 0 && this.#held + grow > this.budget * 64) {`,
    tests: ["tests/scratch_files_test.ts"],
  },
  {
    name: "memory scratch: a request's own budget ignored",
    file: "services/runtime/scratch_files.ts",
    from: `    if (f && bytes > 0 && f.held + bytes > f.limit) {`,
    to: `    if (f && bytes > 0 && f.held + bytes > f.limit * 64) {`,
    tests: ["tests/scratch_files_test.ts"],
  },
  {
    name: "bodies: the field budget ignored",
    file: "services/bodies/form_bodies.ts",
    from: `    if (++this.#count > max) throw tooManyFields(max);`,
    to: `    ++this.#count;`,
    tests: ["tests/form_bodies_test.ts"],
  },
  {
    name: "screenshots: the pixel budget ignored",
    file: "services/screenshots/screenshot_service.ts",
    from:
      `  const over = (w: number, h: number) => w * h * dpr * dpr > budget;`,
    to: `  const over = (_w: number, _h: number) => dpr < 0;`,
    tests: ["tests/screenshot_options_test.ts"],
  },
  {
    name: "screenshots: one account may hold every slot",
    file: "services/screenshots/fair_slots.ts",
    from: `    return this.#active < this.concurrency &&
      this.heldBy(owner) < this.perOwner;`,
    to: `    return this.#active < this.concurrency;`,
    tests: ["tests/fair_slots_test.ts"],
  },
  {
    name: "uploads: files deleted while the row's insert may still commit",
    file: "services/images/pipeline.ts",
    from: `      if (!(inserting && isDatabaseOutage(e))) await dropFiles();`,
    to: `      await dropFiles();`,
    tests: ["tests/stall_test.ts"],
  },
  {
    name: "uploads: the BMP scratch budget ignored",
    file: "services/images/pipeline.ts",
    from: `    const scratch = this.#reserveBmpScratch(shape.bmp);`,
    to: `    const scratch = 0;`,
    tests: ["tests/bmp_test.ts"],
  },
  {
    name: "store: an object renamed without its folder synced",
    file: "services/store/fs_store.ts",
    from: `    if (durable) await syncFile(parent);`,
    to: ``,
    tests: ["tests/store_test.ts"],
  },
  {
    name: "store: an upload's original renamed without being synced",
    file: "services/store/fs_store.ts",
    from: `    if (durable) await syncFile(path);`,
    to: ``,
    tests: ["tests/store_test.ts"],
  },
  {
    name: "keyless bodies: the 64 KiB prefix raised to 64 MiB",
    file: "services/bodies/admission.ts",
    from: `export const KEY_PREFIX_BYTES = 64 * 1024;`,
    to: `export const KEY_PREFIX_BYTES = 64 * 1024 * 1024;`,
    tests: ["tests/form_bodies_test.ts"],
  },
  {
    name: "URL import: a sixth redirect allowed",
    file: "services/net/url_import.ts",
    from: `export const MAX_IMPORT_REDIRECTS = 5;`,
    to: `export const MAX_IMPORT_REDIRECTS = 6;`,
    tests: ["tests/url_import_test.ts"],
  },
  {
    name: "base64: the size cap doubled",
    file: "services/bodies/base64_file.ts",
    from: `    if (this.rec.size + bytes.length > this.maxBytes) {`,
    to: `    if (this.rec.size + bytes.length > this.maxBytes * 2) {`,
    tests: ["tests/form_bodies_test.ts"],
  },
  {
    name: "keys: cached keys trusted while change notices are not heard",
    file: "services/accounts/api_keys.ts",
    from: `  get(hash: string) {
    if (!this.#hearing) return undefined;`,
    to: `  get(hash: string) {`,
    tests: ["tests/image_cache_test.ts"],
  },
  {
    name: "keys: one account revokes another's key",
    file: "services/accounts/api_keys.ts",
    from: `    .where("id", "=", keyId).where("user_id", "=", userId)`,
    to: `    .where("id", "=", keyId)`,
    tests: ["tests/accounts_test.ts"],
  },
  {
    name: "expiry: the fast path's cached row ignores its expiry",
    file: "services/images/image_cache.ts",
    from: `    if (now - hit.at > this.ttlMs) return undefined;
    const exp = hit.row.expires_at;
    if (exp && new Date(exp).getTime() <= now) return undefined;`,
    to: `    if (now - hit.at > this.ttlMs) return undefined;
    const exp = hit.row.expires_at;
    void exp;`,
    tests: ["tests/expiry_test.ts"],
  },
  {
    name: "auth: a wrong key is accepted",
    file: "services/accounts/api_keys.ts",
    from: `if (!row || row.revoked_at) {`,
    to: `if (row?.revoked_at) {`,
    tests: ["tests/accounts_test.ts", "tests/upload_test.ts"],
  },
  {
    name: "auth: a wrong key is not counted against its address",
    file: "services/accounts/authenticator.ts",
    from: `        await failures.count(address);`,
    to: ``,
    tests: ["tests/auth_test.ts"],
  },
  {
    name: "auth: a session's calls are not counted against its minute",
    file: "services/accounts/authenticator.ts",
    from: `    const rate = await this.#leases?.admit(counter);`,
    to: `    const rate = "sessionUserId" in who
      ? undefined
      : await this.#leases?.admit(counter);`,
    tests: ["tests/auth_test.ts"],
  },
  {
    name: "docs: a changed default leaves docs/configuration.md as it was",
    file: "schemas/config.ts",
    from: `  PORT: v(int(8080, 0, 65535), {`,
    to: `  PORT: v(int(8081, 0, 65535), {`,
    tests: ["tests/docs_test.ts"],
  },
  {
    name: "docs: a link's #fragment is never checked",
    file: "scripts/check_links.ts",
    from: `        } else if (!(await anchors(target)).has(fragment)) {`,
    to: `        } else if (false) {`,
    tests: ["tests/docs_test.ts"],
  },
  {
    name: "house: an import back up a floor passes",
    file: "scripts/import_cycles.ts",
    from: `      if (b !== undefined && b > a) {`,
    to: `      if (b !== undefined && b > a + 1) {`,
    tests: ["tests/import_cycles_test.ts"],
  },
  {
    name:
      "screenshots: a spare whose guard the browser service has closed is used",
    file: "services/screenshots/chromium.ts",
    from:
      `      !spare.page.isClosed() && expiresAt > deadline + GUARD_MARGIN_MS`,
    to: `      !spare.page.isClosed()`,
    tests: ["tests/browser_gateway_test.ts"],
  },
  {
    name: "screenshots: a filter build that never ends stays pending",
    file: "services/screenshots/filter_engine.ts",
    from:
      `      () => reject(new Error(\`the filter build took over \${timeoutMs} ms\`)),`,
    to: `      () => {},`,
    tests: ["tests/filter_engine_test.ts"],
  },
  {
    name:
      "images: srcset made on the record's url (a bucket's, with S3_PUBLIC_URL)",
    file: "sdk/src/embed_codes.ts",
    from:
      `  const img = { url: image.transform_url ?? image.url, width: image.width };`,
    to: `  const img = { url: image.url, width: image.width };`,
    tests: ["tests/public_bucket_test.ts"],
  },
  {
    name: "privacy: a private image's file is linked at the public bucket",
    file: "services/images/records.ts",
    from: `  const shown = isRestricted(privacy) ? service : imageHost;`,
    to: `  const shown = imageHost;`,
    tests: ["tests/public_bucket_test.ts"],
  },
  {
    name:
      "images: the WebAssembly engine encodes AVIF at libvips' default effort",
    file: "services/images/engine.ts",
    from: `  return configured ?? (engine === "wasm" ? 1 : 4);`,
    to: `  return configured ?? 4;`,
    tests: ["tests/image_engine_test.ts"],
  },
  {
    name:
      "transforms: a signature is checked against the original's path, whatever path was asked",
    file: "routes/host.ts",
    from: `    const parsed = parseTransform(path, query, rules);`,
    to: `    const parsed = parseTransform(\`/\${original}\`, query, rules);`,
    tests: ["tests/transforms_test.ts"],
  },
  {
    name: "transforms: of several s, the first is taken",
    file: "routes/host.ts",
    from: `      signatureParam(query),`,
    to: `      query.get("s") ?? undefined,`,
    tests: ["tests/transforms_test.ts"],
  },
  {
    name: "transforms: a box larger than the original is made as asked",
    file: "services/images/variant_maker.ts",
    from:
      `        : { ...recipe, ...boxWithin(recipe, source.width, source.height) };`,
    to: `        : recipe;`,
    tests: ["tests/transforms_test.ts"],
  },
  {
    name:
      "transforms: a make is counted only after it (a burst passes the limit)",
    file: "routes/host.ts",
    from: `    makes.admit(address);`,
    to: `    makes.check(address);`,
    tests: ["tests/transforms_test.ts"],
  },
  {
    name: "bodies: an empty source field is an empty image (141), not absent",
    file: "services/bodies/base64_file.ts",
    from: `      this.rec.empty = true;
      return;`,
    to: `      throw bad("the image field is empty");`,
    tests: ["tests/compat_test.ts"],
  },
  {
    name:
      "bodies: a body the shared hold has no room for is told it has no key",
    file: "services/bodies/admission.ts",
    from: `    if (full) {`,
    to: `    if (full && false) {`,
    tests: ["tests/key_hold_test.ts"],
  },
  {
    name: "contract: an unknown /api/1 path is 401 to a caller without a key",
    file: "routes/api_auth.ts",
    from:
      `    if (ownAuthPath(c.req.path) || !isRoute(c.req.path)) return await next();`,
    to: `    if (ownAuthPath(c.req.path)) return await next();`,
    tests: ["tests/auth_test.ts"],
  },
  {
    name: "contract: openapi.yaml written with anchors and aliases",
    file: "routes/docs.ts",
    from:
      `  return stringify(doc, { lineWidth: 0, aliasDuplicateObjects: false });`,
    to: `  return stringify(doc, { lineWidth: 0 });`,
    tests: ["tests/foundation_test.ts"],
  },
  {
    name: "privacy: a private image's page ignores its owner's key",
    file: "routes/viewer.tsx",
    from: `    const ownerByKey = !owner && isRestricted(row.privacy) &&`,
    to: `    const ownerByKey = false && isRestricted(row.privacy) &&`,
    tests: ["tests/privacy_test.ts"],
  },
  {
    name: "key precedence: the query key wins over the header",
    file: "routes/api_auth.ts",
    from: `    let key = headerKey(c);
    const sessionToken`,
    to: `    let key = presentKey(c.req.query("key")) ?? headerKey(c);
    const sessionToken`,
    tests: ["tests/accounts_test.ts"],
  },
  {
    name: "error status: 413 answered as 400",
    file: "schemas/errors.ts",
    from: `  130: { message: "File size too large", status: 413 },`,
    to: `  130: { message: "File size too large", status: 400 },`,
    tests: ["tests/upload_test.ts"],
  },
  {
    name: "guard ranges: 10.0.0.0/8 counted as public",
    file: "services/net/address_guard.ts",
    from: `["10.0.0.0", 8], // private`,
    to: `["10.0.0.0", 32], // private`,
    tests: ["tests/address_guard_test.ts"],
  },
  {
    name: "guard: CONNECT tunnels (WebSockets, HTTPS) pass unchecked",
    file: "services/net/guard_proxy.ts",
    from: `      const upstream = await open(m[1], Number(m[2]), client);`,
    to:
      `      const upstream = await new Promise<import("node:net").Socket>((r) => {
        const s = netConnect({ host: m[1], port: Number(m[2]) });
        s.once("connect", () => r(s));
      });`,
    tests: ["tests/screenshot_hostile_test.ts"],
  },
  {
    name: "metadata strip: JPEG APP1/APP13/COM segments kept",
    file: "services/images/formats/metadata_strip.ts",
    from: `      if (dropsSegment(m)) {`,
    to: `if (false) {`,
    tests: ["tests/metadata_test.ts"],
  },
  {
    name: "metadata strip: PNG eXIf/tEXt/iTXt/zTXt/tIME kept",
    file: "services/images/formats/metadata_strip.ts",
    from: `DROP_PNG.has(type) ? undefined : w.write`,
    to: `w.write`,
    tests: ["tests/metadata_test.ts"],
  },
  {
    name: "store: no fsync of the file",
    file: "services/store/fs_store.ts",
    from: `        if (durable) await f.syncData();`,
    to: ``,
    tests: ["tests/store_test.ts"],
  },
  {
    name: "store: put writes straight to the final path",
    file: "services/store/fs_store.ts",
    from: `    const final = this.#path(key);
    const tmp = join(this.#tmp, \`\${crypto.randomUUID()}-\${key}\`);
    try {`,
    to: `    const final = this.#path(key);
    await Deno.mkdir(join(this.dir, key.slice(0, 2)), { recursive: true });
    await Deno.remove(final).catch(() => {});
    const tmp = final;
    try {`,
    tests: ["tests/store_test.ts"],
  },
  {
    name:
      "bodies: a write buffer goes back to the pool before its bytes are written",
    file: "services/bodies/multipart.ts",
    from: `    const full = this.#buf.subarray(0, this.#len);
`,
    to: `    const full = this.#buf.subarray(0, this.#len);
    WRITES.give(full.buffer as ArrayBuffer);
`,
    tests: ["tests/multipart_test.ts"],
  },
  {
    name: "bodies: a request's read buffers are never given back",
    file: "services/bodies/multipart.ts",
    from: `    for (const b of slots) if (b) READS.give(b);`,
    to: ``,
    tests: ["tests/multipart_test.ts"],
  },
  {
    name: "bodies: the buffer pool takes a buffer back twice",
    file: "services/bodies/buffer_pool.ts",
    from: `this.#free.length < this.keep &&
      !this.#free.includes(buf)`,
    to: `this.#free.length < this.keep`,
    tests: ["tests/multipart_test.ts"],
  },
  {
    name: "bodies: base64's fast path keeps a leftover that is not base64",
    file: "services/bodies/base64_file.ts",
    from: `    if (!CARRY.test(carry)) return false;
`,
    to: ``,
    tests: ["tests/form_bodies_test.ts"],
  },
  {
    name:
      "bodies: base64's fast path takes stray characters (the decoder skips them)",
    file: "services/bodies/base64_file.ts",
    from: `    if (bytes.length !== (whole / 4) * 3 - pad) return false;
`,
    to: ``,
    tests: ["tests/form_bodies_test.ts"],
  },
  {
    name: "bodies: a base64 value cut between its two = is refused",
    file: "services/bodies/base64_file.ts",
    from: `if (body.length < clean.length && clean.length % 4 === 0) {`,
    to: `if (body.length < clean.length) {`,
    tests: ["tests/form_bodies_test.ts"],
  },
  {
    name: "bodies: a form value's + is kept, not read as a space",
    file: "services/bodies/form_bodies.ts",
    from: `  if (s.includes("+")) s = s.replace(/\\+/g, " ");`,
    to: ``,
    tests: ["tests/form_bodies_test.ts"],
  },
  {
    name: "limits: exactly MAX_FILES files refused",
    file: "services/bodies/multipart.ts",
    from: `        files: opts.maxFiles,`,
    to: `        files: opts.maxFiles - 1,`,
    tests: ["tests/upload_test.ts"],
  },
  {
    name: "limits: MAX_IMAGE_PIXELS counts one frame only",
    file: "services/images/pipeline_stages.ts",
    from: `const pixels = meta.width * meta.height * frames;`,
    to: `const pixels = meta.width * meta.height;`,
    tests: ["tests/abuse_test.ts"],
  },
  {
    name: "expiry ignored when looking an image up",
    file: "services/images/records.ts",
    from: `  if (row.expires_at && new Date(row.expires_at) <= clock.now()) {`,
    to: `  if (false) {`,
    tests: ["tests/expiry_test.ts"],
  },
  {
    name: "CSRF: the delete link takes a cross-site POST",
    file: "routes/viewer.tsx",
    from: `app.use("/delete/*", secureHeaders(), formCsrf(deps.config));`,
    to: `app.use("/delete/*", secureHeaders());`,
    tests: ["tests/expiry_test.ts"],
  },
  {
    name: "escaping: viewer title raw",
    file: "routes/viewer.tsx",
    from: `        <h1>{rec.title}</h1>`,
    to: `        <h1>{raw(rec.title)}</h1>`,
    tests: ["tests/embed_test.ts"],
  },
  {
    name: "escaping: HTML embed alt raw",
    file: "sdk/src/embed_codes.ts",
    from: `alt="\${escapeHtml(oneLine(img.title))}"`,
    to: `alt="\${oneLine(img.title)}"`,
    tests: ["tests/embed_test.ts"],
  },
  {
    name: "rate limit: the per-key limit is off by one",
    file: "services/accounts/rate_limit.ts",
    from: `      left: Math.min(n, this.limit - before),`,
    to: `      left: Math.min(n, this.limit - before + 1),`,
    tests: ["tests/accounts_test.ts"],
  },
  {
    name: "login throttle per address ignored",
    file: "routes/account.tsx",
    from:
      `      await attempts.count(clientAddress(c, deps.config.TRUST_PROXY));
      const user = await verifyLogin(`,
    to: `      const user = await verifyLogin(`,
    tests: ["tests/abuse_test.ts"],
  },
  {
    name: "screenshots: zoom ignored",
    file: "services/screenshots/capture_steps.ts",
    from: `      width: Math.round(opts.viewport.width / zoom),`,
    to: `      width: Math.round(opts.viewport.width),`,
    tests: ["tests/screenshot_test.ts"],
  },
  {
    name: "screenshots: colorScheme ignored",
    file: "services/screenshots/capture_steps.ts",
    from: `      ...(opts.colorScheme !== "default"`,
    to: `      ...(false`,
    tests: ["tests/screenshot_test.ts"],
  },
  {
    name: "browser: close() leaves Chromium running",
    file: "services/screenshots/chromium.ts",
    from: `    else await b.close().catch(() => {});`,
    to: `    else await b.disconnect().catch(() => {});`,
    tests: ["tests/browser_life_test.ts"],
  },
  {
    name: "shutdown: stop accepting while a body still arrives",
    file: "server/lifecycle.ts",
    from: `  if (!await lifecycle.whenNoBodyInFlight(opts.graceMs)) {`,
    to: `  if (!await lifecycle.whenNoBodyInFlight(0)) {`,
    tests: ["tests/lifecycle_test.ts"],
  },
  {
    name: "operator: any account passes the admin role check",
    file: "services/operator/roles.ts",
    from:
      `  return row?.role === "admin" ? { id: row.id, email: row.email } : null;`,
    to: `  return row ? { id: row.id, email: row.email } : null;`,
    tests: ["tests/admin_test.ts", "tests/admin_pages_test.ts"],
  },
  {
    name: "operator: the admin API lets a stranger through its gate",
    file: "routes/admin.ts",
    from: `    if (!admin) throw new ApiError(404);
    c.set("admin", admin);`,
    to: `    if (admin) c.set("admin", admin);`,
    tests: ["tests/admin_test.ts"],
  },
  {
    name: "operator: every sign-up becomes an admin",
    file: "services/accounts/accounts.ts",
    from: `      if (await hasNoAdmin(tx)) made = "admin";`,
    to: `      made = "admin";`,
    tests: ["tests/signup_control_test.ts"],
  },
  {
    name: "operator: the storage quota is not checked",
    file: "services/accounts/quotas.ts",
    from:
      `      if (limits.storageBytes && usedBytes + bytes > limits.storageBytes) {`,
    to: `      if (false) {`,
    tests: ["tests/quota_test.ts"],
  },
  {
    name:
      "operator: uploads in flight are not counted against the quota (the race)",
    file: "services/accounts/quotas.ts",
    from: `      const usedBytes = Number(stored.bytes) + Number(held.bytes);`,
    to: `      const usedBytes = Number(stored.bytes);`,
    tests: ["tests/quota_test.ts"],
  },
  {
    name: "operator: the image-count quota is not checked",
    file: "services/accounts/quotas.ts",
    from: `      if (limits.images && usedImages + 1 > limits.images) {`,
    to: `      if (false) {`,
    tests: ["tests/quota_test.ts", "tests/admin_test.ts"],
  },
  {
    name: "operator: a taken-down image is answered as missing, not 451",
    file: "services/images/records.ts",
    from: `    if (row.taken_down_at && !opts.quiet) throw new ApiError(451);`,
    to: ``,
    tests: ["tests/takedown_test.ts"],
  },
  {
    name: "operator: a taken-down image's bytes stay in the store",
    file: "services/operator/takedown.ts",
    from: `  await removeImageBytes(db, store, row);`,
    to: ``,
    tests: ["tests/takedown_test.ts"],
  },
  {
    name:
      "operator: taken-down bytes may be uploaded again (no blocked-hash check)",
    file: "services/db/migrations/012_operator.sql",
    from:
      `  if exists (select 1 from blocked_hashes where sha256 = new.sha256) then`,
    to: `  if false then`,
    tests: ["tests/takedown_test.ts"],
  },
  {
    name: "operator: a used invitation is taken again",
    file: "services/operator/invites.ts",
    from: `  if (r.uses >= r.max_uses) return "used";`,
    to: ``,
    tests: ["tests/signup_control_test.ts"],
  },
  {
    name: "operator: SIGNUP=closed lets anyone sign up",
    file: "routes/account.tsx",
    from: `    if (deps.config.SIGNUP === "closed") {`,
    to: `    if (false) {`,
    tests: ["tests/signup_control_test.ts"],
  },
  {
    name: "operator: /metrics answers without its token",
    file: "routes/metrics_route.ts",
    from: `    if (!given || !safeEqual(given, token)) {`,
    to: `    if (false) {`,
    tests: ["tests/metrics_test.ts"],
  },
  {
    name: "operator: the console's pages serve a user",
    file: "routes/admin_console.tsx",
    from:
      `    if (!user || !await adminOf(db, user.userId)) throw new ApiError(404);`,
    to: `    if (!user) throw new ApiError(404);`,
    tests: ["tests/admin_pages_test.ts"],
  },
  {
    name: "bite: a prefix or an empty s= passes the signature check",
    file: "services/images/transforms.ts",
    from: `  if (a.length !== b.length) return false;`,
    to: ``,
    tests: ["tests/transforms_test.ts"],
  },
  {
    name:
      "bite: password tokens do not carry their kind (a page's unlock opens files)",
    file: "services/privacy/password_access.ts",
    from: "`${kind}:${id}:${exp}:${hash}`",
    to: "`${id}:${exp}:${hash}`",
    tests: ["tests/privacy_test.ts"],
  },
  {
    name:
      "bite: others see an album's newest image as cover whatever its privacy",
    file: "services/albums/albums.ts",
    from: `    perPage: 1,
    publicOnly,
  });`,
    to: `    perPage: 1,
  });`,
    tests: ["tests/albums_test.ts"],
  },
  {
    name: "bite: others see a private or unlisted set cover",
    file: "services/albums/albums.ts",
    from:
      `    if (set && (!publicOnly || set.privacy === "public")) cover = set;`,
    to: `    if (set) cover = set;`,
    tests: ["tests/albums_test.ts"],
  },
  {
    name: "bite: the album pickers list every account's albums",
    file: "services/albums/albums.ts",
    from: `  return await db.selectFrom("albums").select(["id", "title"])
    .where("user_id", "=", userId)`,
    to: `  return await db.selectFrom("albums").select(["id", "title"])`,
    tests: ["tests/albums_test.ts"],
  },
  {
    name:
      "bite: the guest sweep retires a guest whose first upload is in flight",
    file: "services/accounts/guests.ts",
    from:
      `    .where("created_at", "<", new Date(now.getTime() - maxAgeS * 1000))`,
    to: ``,
    tests: ["tests/guests_test.ts"],
  },
  {
    name: "bite: a backslash in a search word is LIKE's escape",
    file: "services/images/records.ts",
    from: "  return text.replace(/[\\\\%_]/g, (c) => `\\\\${c}`);",
    to: "  return text.replace(/[%_]/g, (c) => `\\\\${c}`);",
    tests: ["tests/image_find_test.ts"],
  },
  {
    name:
      "bite: a flush during a running sync is acknowledged before the WAL is on disk",
    file: "services/db/wal_flusher.ts",
    from:
      `    if (this.#dirty.size === 0) return this.#current ?? Promise.resolve();`,
    to: `    if (this.#dirty.size === 0) return Promise.resolve();`,
    tests: ["tests/wal_flusher_test.ts"],
  },
  {
    name: "bite: a lapsed lease is waited out instead of taken over",
    file: "services/images/variant_maker.ts",
    from:
      '            eb("image_variants.lease_until", "<", sql<Date>`now()`),',
    to: ``,
    tests: ["tests/transforms_test.ts"],
  },
  {
    name: "bite: by default one account may take every capture slot",
    file: "schemas/config.ts",
    from: `    SCREENSHOT_PER_KEY: c.SCREENSHOT_PER_KEY ||
      Math.max(1, c.SCREENSHOT_CONCURRENCY - 1),`,
    to:
      `    SCREENSHOT_PER_KEY: c.SCREENSHOT_PER_KEY || c.SCREENSHOT_CONCURRENCY,`,
    tests: ["tests/fair_slots_test.ts"],
  },
  {
    name:
      "bite: text after base64 padding is decoded on (QUJDQQ==QUI stores ABCAAB)",
    file: "services/bodies/base64_file.ts",
    from: `    if (pad && carry) return false;`,
    to: ``,
    tests: ["tests/form_bodies_test.ts"],
  },
  {
    name: "bite: an address in a base64 field has no length cap",
    file: "services/bodies/base64_file.ts",
    from: `      if (this.#url.length > MAX_URL_LENGTH) {`,
    to: `      if (false) {`,
    tests: ["tests/form_bodies_test.ts"],
  },
  {
    name:
      "bite: a fixed element about cookies without an accept control is hidden",
    file: "services/screenshots/page_cleanup.ts",
    from: `      (prose.length < 200 && labels.some((l) => accept.test(l)));`,
    to: `      prose.length < 200;`,
    tests: ["tests/screenshot_hiding_test.ts"],
  },
  {
    name: "config: an error quotes a secret's value",
    file: "schemas/config.ts",
    from: `          !isSecretVariable(String(i.path[0]))`,
    to: `          true`,
    tests: ["tests/foundation_test.ts"],
  },
  {
    name: "transforms: format=auto takes image/avif;q=0 for a yes",
    file: "services/images/transforms.ts",
    from:
      `  if (avifFits && !mayAnimate(sourceExt) && acceptsType(a, "image/avif")) {`,
    to:
      `  if (avifFits && !mayAnimate(sourceExt) && a.toLowerCase().includes("image/avif")) {`,
    tests: ["tests/transforms_test.ts"],
  },
  {
    name:
      "transforms: an encode libvips cannot stop starts whatever its cost (AVIF runs past IMAGE_TIMEOUT_MS)",
    file: "services/images/variant_maker.ts",
    from: "    if (!format) return undefined;",
    to: "    if (format) return undefined;",
    tests: ["tests/transforms_test.ts"],
  },
  {
    name:
      "transforms: the encode plan takes the cheapest effort, not the highest that fits",
    file: "services/images/encode_budget.ts",
    from: "  ].filter((e) => e <= ceiling).sort((a, b) => b - a);",
    to: "  ].filter((e) => e <= ceiling).sort((a, b) => a - b);",
    tests: ["tests/transforms_test.ts"],
  },
  {
    name:
      "transforms: a make's lease is never renewed (a slow variant is made twice)",
    file: "services/images/variant_maker.ts",
    from: "    const renewal = this.shared ? this.#renew(key) : undefined;",
    to: "    const renewal = undefined;",
    tests: ["tests/transforms_test.ts"],
  },
  {
    name:
      "transforms: a deletion loses to a make in flight (its variant stays)",
    file: "services/images/variant_maker.ts",
    from: "    if (live) return;",
    to: "    return;",
    tests: ["tests/transforms_test.ts"],
  },
  {
    name:
      "bodies: a small body's memory folder may not grow past its reservation (a TIFF's rewrite is 130)",
    file: "services/runtime/scratch_files.ts",
    from:
      "    this.folders.set(folder, { limit: Infinity, held: 0, reserved: bytes });",
    to:
      "    this.folders.set(folder, { limit: bytes, held: 0, reserved: bytes });",
    tests: ["tests/metadata_test.ts", "tests/scratch_files_test.ts"],
  },
  {
    name:
      "sdk: the npm tarball's files are packed outside package/ (npm installs an empty package)",
    file: "services/sdk/npm_package.ts",
    from: "        name: `package/${path}`,",
    to: "        name: path,",
    tests: ["tests/sdk_test.ts"],
  },
  {
    name:
      "consent: the word cookie and one OK make a consent dialog (a recipes footer is removed)",
    file: "services/screenshots/page_cleanup.ts",
    from: "    if (!vocabulary.test(prose)) return false;",
    to: "",
    tests: ["tests/screenshot_hiding_test.ts"],
  },
  {
    name: "consent: closed shadow roots are not kept (their banners stay)",
    file: "services/screenshots/capture_steps.ts",
    from:
      "    if (opts.noCookie) await page.evaluateOnNewDocument(keepShadowRoots);",
    to: "",
    tests: ["tests/screenshot_hiding_test.ts"],
  },
  {
    name: "consent: banners are looked for once, before the caller's delay",
    file: "services/screenshots/capture_steps.ts",
    from: "    if (opts.noCookie && (opts.delay || opts.js)) {",
    to: "    if (false) {",
    tests: ["tests/screenshot_hiding_test.ts"],
  },
  {
    name: "consent: an unlocked body stays its own scroller (overflow auto)",
    file: "services/screenshots/page_cleanup.ts",
    from: `    body.style.setProperty("overflow", "visible", "important");`,
    to: `    body.style.setProperty("overflow", "auto", "important");`,
    tests: ["tests/screenshot_hiding_test.ts"],
  },
  {
    name:
      "resumable: anyone with a key may continue or read another account's upload",
    file: "services/uploads/resumable.ts",
    from:
      "      if (owner !== userId) return this.#refuse(404, new ApiError(404));",
    to: "",
    tests: ["tests/tus_test.ts"],
  },
  {
    name: "resumable: a refused upload's info is left behind",
    file: "services/uploads/tus_backends.ts",
    from: "      await Deno.remove(`${path}.json`).catch(() => {});",
    to: "",
    tests: ["tests/tus_test.ts"],
  },
  {
    name: "resumable: the last PATCH answers nothing, not the image record",
    file: "services/uploads/resumable.ts",
    from: "        body: this.deps.answer(record),",
    to: '        body: "",',
    tests: ["tests/tus_test.ts"],
  },
  {
    name: "resumable: tus's own refusals go out as plain text",
    file: "services/uploads/resumable.ts",
    from:
      '    if (res.status < 400 || type.includes("application/json")) return res;',
    to: "    return res;",
    tests: ["tests/tus_test.ts"],
  },
  {
    name:
      "resumable: a file over the account's quota is taken whole before its 180",
    file: "services/uploads/resumable.ts",
    from: "      await this.deps.fits(owner, upload.size);",
    to: "",
    tests: ["tests/tus_test.ts"],
  },
  {
    name: "resumable: an account may open unfinished uploads without bound",
    file: "services/uploads/resumable.ts",
    from: "    if (open.length >= this.deps.config.TUS_UPLOADS_AT_ONCE) {",
    to: "    if (false) {",
    tests: ["tests/tus_test.ts"],
  },
  {
    name: "sdk: a large file is sent in one request, never resumable",
    file: "sdk/src/service_app.ts",
    from: "    const from = options.resumableFromMB ?? 8;",
    to: "    const from = 0;",
    tests: ["tests/sdk_test.ts"],
  },
  {
    name: "widget: large files go in the one request, never resumable",
    file: "sdk/src/widget.ts",
    from:
      "  const resumable = (f: File) => resumableFrom > 0 && f.size > resumableFrom;",
    to: "  const resumable = (_f: File) => false;",
    tests: ["tests/sdk_test.ts"],
  },
  {
    name:
      "cors: browsers on other sites may not PATCH (tus clients there fail)",
    file: "routes/sdk.tsx",
    from:
      '    allowMethods: ["GET", "HEAD", "POST", "PATCH", "DELETE", "OPTIONS"],',
    to: '    allowMethods: ["GET", "POST", "DELETE", "OPTIONS"],',
    tests: ["tests/uppy_test.ts"],
  },
  {
    name: "resumable: the privacy the metadata asks for is ignored",
    file: "services/uploads/resumable.ts",
    from:
      "          meta.privacy ?? undefined,\n          meta.password ?? undefined,\n        ),\n        maxBytes",
    to:
      "          undefined,\n          undefined,\n        ),\n        maxBytes",
    tests: ["tests/tus_test.ts"],
  },
  {
    name:
      "resumable: the orphan sweep removes a resumable upload's objects in the bucket",
    file: "services/images/orphans.ts",
    from: "    if (o.key.startsWith(TUS_ID_PREFIX)) continue;",
    to: "",
    tests: ["tests/tus_s3_test.ts"],
  },
  {
    name:
      "resumable: parts in the bucket as large as a whole upload (a cut one keeps nothing; the next instance starts from zero)",
    file: "services/uploads/bucket_store.ts",
    from: "    private readonly partBytes = 1024 * 1024,",
    to: "    private readonly partBytes = 1024 * 1024 * 1024,",
    tests: ["tests/tus_s3_test.ts"],
  },
  {
    name: "resumable: the bucket store never expires an upload",
    file: "services/uploads/bucket_store.ts",
    from:
      "    const old = [...infos].filter(([, t]) => t < cutoff).map(([id]) => id);",
    to: "    const old: string[] = [];",
    tests: ["tests/tus_s3_test.ts"],
  },
  {
    name:
      "resumable: memory scratch takes uploads up to TUS_MAX_FILE_BYTES, refused only at their last chunk",
    file: "services/uploads/tus_path.ts",
    from:
      '  return config.SCRATCH === "memory" && memory < config.TUS_MAX_FILE_BYTES',
    to: "  return false && memory < config.TUS_MAX_FILE_BYTES",
    tests: ["tests/tus_s3_test.ts"],
  },
  {
    name:
      "cors: every OPTIONS is taken for a preflight, so tus's discovery never reaches tus",
    file: "routes/sdk.tsx",
    from: '      c.req.method !== "OPTIONS" ||',
    to: "      true ||",
    tests: ["tests/tus_test.ts"],
  },
  {
    name:
      "scratch: a memory file's write lands at the start of its last part, not at its offset",
    file: "services/runtime/scratch_files.ts",
    from: "        const at = from + off - start;",
    to: "        const at = 0;",
    tests: ["tests/scratch_files_test.ts"],
  },
  {
    name:
      "collector: a collection after every dropped buffer, whatever its size",
    file: "services/runtime/collector.ts",
    from: "    if (this.#since < this.everyBytes || this.#due) return;",
    to: "    if (this.#due) return;",
    tests: ["tests/collector_test.ts"],
  },
  {
    name: "encode memory: an AVIF past IMAGE_ENCODE_MB is encoded anyway",
    file: "services/images/variant_maker.ts",
    from:
      '    if (format === "avif" && pixels > max) throw avifTooLarge(pixels, max);',
    to: "",
    tests: ["tests/transforms_test.ts"],
  },
  {
    name:
      "encode memory: format=auto answers AVIF whatever its encode would take",
    file: "routes/host.ts",
    from: "      maker.avifFits(parsed.transform, row.width, row.height),",
    to: "      true,",
    tests: ["tests/transforms_test.ts"],
  },
  {
    name: "codes box: an image without the picked version drops out of the box",
    file: "routes/pages/layout.tsx",
    from: '      item.codes[type] ?? item.codes[plainType(type)] ?? "",',
    to: '      item.codes[type] ?? "",',
    tests: ["tests/site_browser_test.ts"],
  },
  {
    name: "site: a bulk action with nothing ticked says it moved 0 images",
    file: "routes/my_images.tsx",
    from: "  return props.n > 0",
    to: "  return true",
    tests: ["tests/site_test.ts"],
  },
  {
    name: "site: the viewer's edit form ignores its Delete after",
    file: "routes/organise.tsx",
    from:
      "      ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),",
    to: "      ...{},",
    tests: ["tests/site_test.ts"],
  },
  {
    name: "guests: claimed images keep the guest's expiry",
    file: "services/accounts/guests.ts",
    from: "    if (capped.length) {",
    to: "    if (false) {",
    tests: ["tests/guests_test.ts"],
  },
  {
    name:
      "form errors: a refused site form answers the JSON envelope as its page",
    file: "app.ts",
    from: "      if (back) return c.redirect(back, 303);",
    to: "",
    tests: ["tests/site_test.ts"],
  },
  {
    name: "form errors: the message goes into the page unescaped",
    file: "routes/pages/form_errors.ts",
    from: "    escapeHtml(message)\n",
    to: "    message\n",
    tests: ["tests/site_test.ts"],
  },
  {
    name: "form errors: a page behind two chains shows the message twice",
    file: "routes/pages/form_errors.ts",
    from:
      '  const at = html.includes(\'id="form-error"\') ? -1 : html.indexOf("</h1>");',
    to: '  const at = html.indexOf("</h1>");',
    tests: ["tests/site_test.ts"],
  },
  {
    name:
      "session forms: an edit posted after signing out lands on a bare log-in page",
    file: "routes/session.ts",
    from:
      '  if (!user) return c.redirect(signedOutLogin(c.req.header("referer")), 303);',
    to: '  if (!user) return c.redirect("/login", 303);',
    tests: ["tests/site_test.ts"],
  },
  {
    name: "login: never goes back to the page a signed-out form was on",
    file: "routes/account.tsx",
    from:
      '      return c.redirect(localPath(String(body.next ?? "")) ?? "/", 303);',
    to: '      return c.redirect("/", 303);',
    tests: ["tests/site_test.ts"],
  },
  {
    name: "albums: a password the browser filled in refuses a public album",
    file: "routes/organise.tsx",
    from: '  return form.password && form.privacy === "password"',
    to: "  return form.password",
    tests: ["tests/site_test.ts"],
  },
  {
    name: "cards: a long title squeezes its checkbox",
    file: "routes/pages/layout.tsx",
    from: ".check input{flex:none}.check>span{min-width:0}",
    to: "",
    tests: ["tests/site_browser_test.ts"],
  },
  {
    name: "cards: opening one card's Edit moves the next card's buttons",
    file: "routes/pages/layout.tsx",
    from: "list-style:none;align-items:start}",
    to: "list-style:none}",
    tests: ["tests/site_browser_test.ts"],
  },
  {
    name: "cards: a phone's card cuts the privacy choice ('Public: anyor')",
    file: "routes/pages/fields.tsx",
    from: "            {props.compact ? word : `${word}: ${who}`}",
    to: "            {`${word}: ${who}`}",
    tests: ["tests/site_browser_test.ts"],
  },
  {
    name: "home: the uploader offers no album",
    file: "routes/pages/assets/home.js",
    from:
      "    albums: box.dataset.albums ? JSON.parse(box.dataset.albums) : undefined,",
    to: "    albums: undefined,",
    tests: ["tests/site_browser_test.ts"],
  },
  {
    name: "albums: \u2191 and \u2193 swap nothing",
    file: "services/albums/albums.ts",
    from: "  [order[at], order[to]] = [order[to], order[at]];",
    to: "",
    tests: ["tests/site_test.ts"],
  },
  {
    name: "albums: Make cover leaves the cover as it was",
    file: "routes/organise.tsx",
    from: '      cover_image_id: r.form.image ?? "",',
    to: "",
    tests: ["tests/site_test.ts"],
  },
  {
    name: "self-service: a new password leaves every other sign-in open",
    file: "services/accounts/self_service.ts",
    from: "  return await endOtherSessions(db, userId, keepSid);",
    to: "  return 0;",
    tests: ["tests/site_test.ts"],
  },
  {
    name: "self-service: any current password will do",
    file: "services/accounts/self_service.ts",
    from:
      "  if (!password || !await verifyPassword(password, row.password_hash)) {",
    to: "  if (!password) {",
    tests: ["tests/site_test.ts"],
  },
  {
    name: "self-service: Sign out everywhere else signs this browser out too",
    file: "services/accounts/self_service.ts",
    from: '  if (keepSid) q = q.where("id_hash", "!=", sha256Hex(keepSid));',
    to: "",
    tests: ["tests/site_test.ts"],
  },
  {
    name:
      "self-service: a deleted account's images keep their bytes in the store",
    file: "services/accounts/self_service.ts",
    from: "  for (const row of rows) await deleteImage(db, store, row, clock);",
    to: "",
    tests: ["tests/site_test.ts"],
  },
  {
    name: "self-service: the site deletes an account without its password",
    file: "routes/account_security.tsx",
    from:
      '    await confirmPassword(db, r.user.userId, r.form.password ?? "");',
    to: "",
    tests: ["tests/site_test.ts"],
  },
  {
    name: "self-service: the only admin deletes their account",
    file: "services/accounts/self_service.ts",
    from: "    if (admins.length < 2) {",
    to: "    if (false) {",
    tests: ["tests/site_test.ts"],
  },
  {
    name:
      "form errors: an upload's multipart body is parsed again for a way back",
    file: "routes/pages/form_errors.ts",
    from:
      '    (contentType ?? "").startsWith("application/x-www-form-urlencoded");',
    to: "    true;",
    tests: ["tests/site_test.ts"],
  },
  {
    name: "titles: a NUL in an upload's name is a 500 again",
    file: "services/images/pipeline.ts",
    from: '      title: file.filename.replaceAll("\\0", "") || "image",',
    to: "      title: file.filename,",
    tests: ["tests/abuse_test.ts"],
  },
  {
    name: "titles: a NUL in a PATCH's title is a 500 again",
    file: "schemas/image.ts",
    from: '  "at most 255 characters",\n).refine(noNul, NO_NUL);',
    to: '  "at most 255 characters",\n);',
    tests: ["tests/abuse_test.ts"],
  },
  {
    name:
      "self-service: a deletion the store interrupts leaves the rest's bytes stored for good",
    file: "services/accounts/self_service.ts",
    from:
      '  const rows = await db.updateTable("images").set({ expires_at: clock.now() })',
    to:
      '  const rows = await db.updateTable("images").set({ user_id: userId })',
    tests: ["tests/site_test.ts"],
  },
  {
    name:
      "origin: with BASE_URL unset, links are localhost's again whatever address was used",
    file: "services/runtime/link_base.ts",
    from:
      "  const origin = config.BASE_URL_SET ? undefined : requestOrigin.getStore()?.();",
    to: "  const origin = config.BASE_URL_SET ? undefined : undefined;",
    tests: ["tests/site_origin_test.ts"],
  },
  {
    name: "origin: a forwarded host is believed without TRUST_PROXY",
    file: "services/runtime/link_base.ts",
    from: "  if (!trustProxy) return own;\n",
    to: "",
    tests: ["tests/site_origin_test.ts"],
  },
  {
    name: "origin: a forwarded host with a path smuggled in is taken",
    file: "services/runtime/link_base.ts",
    from:
      '    if (u.pathname !== "/" || u.username || u.search || u.hash) return own;\n',
    to: "",
    tests: ["tests/site_origin_test.ts"],
  },
  {
    name: "origin: IMAGE_HOST_URL given is replaced by the request's origin",
    file: "services/runtime/link_base.ts",
    from:
      "    imageHost: config.IMAGE_HOST_URL_SET\n      ? config.IMAGE_HOST_URL\n      : follows(config.IMAGE_HOST_URL),",
    to: "    imageHost: follows(config.BASE_URL),",
    tests: ["tests/site_origin_test.ts"],
  },
  {
    name: "origin: pages link the site absolutely again (BASE_URL's)",
    file: "routes/pages/site_links.ts",
    from: "    if (url.startsWith(`${base}/`)) return url.slice(base.length);",
    to: "    if (url.startsWith(`${base}/`)) return url;",
    tests: ["tests/site_origin_test.ts"],
  },
  {
    name:
      "origin: a private image's thumbnail on the site comes from IMAGE_HOST_URL (no session there)",
    file: "routes/pages/site_links.ts",
    from: "  return restricted ? [base, service] : [base];",
    to: "  return [base];",
    tests: ["tests/site_origin_browser_test.ts"],
  },
  {
    name: "origin: the served API document names BASE_URL only",
    file: "routes/docs.ts",
    from:
      "    if (here === new URL(deps.config.BASE_URL).origin) return cached;",
    to: "    return cached;",
    tests: ["tests/site_origin_test.ts"],
  },
  {
    name:
      "origin: the start-up line says localhost for a listener on another address",
    file: "server/composition.ts",
    from: "    const open = wildcard ? `http://localhost:${port}` : listen;",
    to: "    const open = `http://localhost:${port}`;",
    tests: ["tests/site_origin_test.ts"],
  },
  {
    name:
      "origin: a resumable upload's Location is absolute from the Host header again",
    file: "services/uploads/resumable.ts",
    from: "      relativeLocation: true,",
    to: "      respectForwardedHeaders: true,",
    tests: ["tests/site_origin_test.ts"],
  },
  {
    name:
      "export: an image whose bytes are gone is listed with a file the zip lacks",
    file: "services/accounts/export.ts",
    from: "        file: included.has(row.id) ? pathOf(row) : null,",
    to: "        file: pathOf(row),",
    tests: ["tests/account_export_test.ts"],
  },
  {
    name: "export: only the first page of images is exported",
    file: "services/accounts/export.ts",
    from: "    if (page.length < PAGE) return;",
    to: "    return;",
    tests: ["tests/account_export_test.ts"],
  },
  {
    name: "export: two exports of one account run at once",
    file: "services/accounts/export.ts",
    from: "  running.add(userId);\n",
    to: "",
    tests: ["tests/account_export_test.ts"],
  },
  {
    name:
      "export: a failed or cancelled download leaves the account exporting for good",
    file: "services/accounts/export.ts",
    from: "      release();\n      if (e !== undefined)",
    to: "      if (e !== undefined)",
    tests: ["tests/account_export_test.ts"],
  },
  {
    name: "export: someone else's images go into the zip",
    file: "services/accounts/export.ts",
    from: '    .where("user_id", "=", userId).where("id", ">", after)',
    to: '    .where("id", ">", after)',
    tests: ["tests/account_export_test.ts"],
  },
  {
    name: "export: deleted images go into the zip",
    file: "services/accounts/export.ts",
    from: "  return liveImages(deps.db, deps.clock).selectAll()",
    to: '  return deps.db.selectFrom("images").selectAll()',
    tests: ["tests/account_export_test.ts"],
  },
  {
    name: "export: a download that ends short is not logged",
    file: "services/accounts/export.ts",
    from: "      if (e !== undefined) deps.onError?.(e);\n",
    to: "",
    tests: ["tests/account_export_test.ts"],
  },
  {
    name:
      "sdk package: a tar whose entries fill a record has no end-of-archive blocks (npm: TAR_BAD_ARCHIVE)",
    file: "services/sdk/npm_package.ts",
    from: "  const out = new Uint8Array(tar.length + 1024);",
    to: "  const out = new Uint8Array(tar.length);",
    tests: ["tests/npm_package_test.ts"],
  },
  {
    name: "jobs: a cancelled job runs anyway",
    file: "services/screenshots/jobs.ts",
    from:
      '      .where("id", "=", id).where("status", "in", ["queued", "running"])',
    to: '      .where("id", "=", id)',
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name:
      "jobs: a refused capture is retried until it ends as a busy browser would",
    file: "services/screenshots/jobs.ts",
    from: "  return e.status === 503 || e.code === 170;",
    to: "  return true;",
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name: "jobs: someone else's job is readable",
    file: "services/screenshots/jobs.ts",
    from:
      '      .where("id", "=", id).where("user_id", "=", userId).executeTakeFirst();',
    to: '      .where("id", "=", id).executeTakeFirst();',
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name:
      "jobs: a finished job can be cancelled (its record says cancelled after done)",
    file: "services/screenshots/jobs.ts",
    from:
      '      .where("status", "in", ["queued", "running"]).returningAll()\n',
    to: "      .returningAll()\n",
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name:
      "jobs: the worker is not stopped with its app (queued jobs run on a closing instance)",
    file: "app.ts",
    from: "  stoppers.set(app, () => jobs.stop());\n",
    to: "",
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name: "jobs: async with share false is accepted",
    file: "schemas/screenshot.ts",
    from: "  if (r.async && !r.share) {",
    to: "  if (false) {",
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name:
      "pglite: a multi-statement script goes to query() (the queue's maintenance fails)",
    file: "services/db/pglite_dialect.ts",
    from: "  return q.parameters.length === 0 && /;\\s*\\S/.test(q.sql);",
    to: "  return false;",
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name:
      "webhooks: the signature leaves the timestamp out (a replay signs the same)",
    file: "services/screenshots/webhooks.ts",
    from: "      new TextEncoder().encode(`${t}.${body}`),",
    to: "      new TextEncoder().encode(body),",
    tests: ["tests/webhooks_test.ts"],
  },
  {
    name: "webhooks: a try answered 500 is not tried again",
    file: "services/screenshots/jobs.ts",
    from: "    if (!outcome.ok && !last) {",
    to: "    if (false) {",
    tests: ["tests/webhooks_test.ts"],
  },
  {
    name: "webhooks: redirects are followed",
    file: "services/net/guarded_post.ts",
    from:
      '      redirect: "manual",\n      signal: AbortSignal.timeout(opts.timeoutMs),\n      headers: { "content-type": "application/json", ...headers },',
    to:
      '      redirect: "follow",\n      signal: AbortSignal.timeout(opts.timeoutMs),\n      headers: { "content-type": "application/json", ...headers },',
    tests: ["tests/webhooks_test.ts"],
  },
  {
    name: "webhooks: a private webhook_url is accepted at request time",
    file: "services/screenshots/jobs.ts",
    from: "      if (!req.webhook_url) continue;",
    to: "      continue;",
    tests: ["tests/webhooks_test.ts"],
  },
  {
    name: "webhooks: a job's end is recorded without queueing its webhook",
    file: "services/screenshots/jobs.ts",
    from: "      if (req.webhook_url && boss && notify) {",
    to: "      if (false) {",
    tests: ["tests/webhooks_test.ts"],
  },
  {
    name:
      "jobs: one account's queued jobs take every free slot (no group limit)",
    file: "services/screenshots/jobs.ts",
    from: "        localGroupConcurrency: config.SCREENSHOT_PER_KEY,\n",
    to: "",
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name: "batches: more than SCREENSHOT_BATCH_MAX are queued",
    file: "routes/screenshot_jobs.ts",
    from: "    if (requests.length > max) {",
    to: "    if (false) {",
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name: "batches: jobs come back in no particular order",
    file: "services/screenshots/jobs.ts",
    from: '      .orderBy("batch_index").execute();',
    to: '      .orderBy("id").execute();',
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name:
      "schedules: runs closer than SCREENSHOT_SCHEDULE_MIN_MINUTES are accepted",
    file: "services/screenshots/schedules.ts",
    from: "      if (gap < min) {",
    to: "      if (false) {",
    tests: ["tests/screenshot_schedules_test.ts"],
  },
  {
    name: "schedules: notify_on_change calls the webhook on an unchanged page",
    file: "services/screenshots/schedules.ts",
    from:
      "    return { notify: changed > schedule.change_threshold, changed };",
    to: "    return { notify: true, changed };",
    tests: ["tests/screenshot_schedules_test.ts"],
  },
  {
    name:
      "schedules: the first run calls the webhook (no mark to compare with)",
    file: "services/screenshots/schedules.ts",
    from: "    if (!previous) return { notify: false, changed: null };",
    to: "    if (!previous) return { notify: true, changed: null };",
    tests: ["tests/screenshot_schedules_test.ts"],
  },
  {
    name: "schedules: a paused schedule still shows next runs (its timer kept)",
    file: "routes/screenshot_schedules.ts",
    from:
      "    const next = row.paused ? [] : await schedules.preview(row.cron, 3);",
    to: "    const next = await schedules.preview(row.cron, 3);",
    tests: ["tests/screenshot_schedules_test.ts"],
  },
  {
    name: "schedules: an account may have any number",
    file: "services/screenshots/schedules.ts",
    from: "    if (Number(count.n) >= max) {",
    to: "    if (false) {",
    tests: ["tests/screenshot_schedules_test.ts"],
  },
  {
    name:
      "lanes: a full page is light (it shares the browser with everyone's light captures)",
    file: "services/screenshots/lanes.ts",
    from: '  if (opts.fullPage || opts.format === "pdf") return true;',
    to: '  if (opts.format === "pdf") return true;',
    tests: ["tests/lanes_test.ts"],
  },
  {
    name: "lanes: the heavy lane is off by default",
    file: "schemas/config.ts",
    from: '  SCREENSHOT_HEAVY_LANE: v(z.enum(["on", "off"]).default("on"), {',
    to: '  SCREENSHOT_HEAVY_LANE: v(z.enum(["on", "off"]).default("off"), {',
    tests: ["tests/browser_life_test.ts"],
  },
  {
    name: "memory admission: a body is read before its bytes are admitted",
    file: "services/images/pipeline.ts",
    from:
      "      declaredBytes ?? SMALL_BODY_BYTES,\n      config.IMAGE_TIMEOUT_MS,",
    to: "      0,\n      config.IMAGE_TIMEOUT_MS,",
    tests: ["tests/memory_admission_test.ts"],
  },
  {
    name: "memory admission: a small waiter overtakes a large one",
    file: "services/runtime/byte_gate.ts",
    from:
      "    if (this.#line.length === 0 && this.#held + n <= this.capacity) {",
    to: "    if (this.#held + n <= this.capacity) {",
    tests: ["tests/memory_admission_test.ts"],
  },
  {
    name: "memory admission: a refused head keeps the line waiting",
    file: "services/runtime/byte_gate.ts",
    from:
      "          // The head leaving may let the next ones in.\n          this.#admit();",
    to: "          // The head leaving may let the next ones in.",
    tests: ["tests/memory_admission_test.ts"],
  },
  {
    name: "big buffers: a memory scratch file is gathered into a plain buffer",
    file: "services/runtime/scratch_files.ts",
    from: "  const whole = bigBuffer(e.size);",
    to: "  const whole = new Uint8Array(e.size);",
    tests: ["tests/big_buffer_test.ts"],
  },
  {
    name: "big buffers: a big buffer is a plain one",
    file: "services/runtime/big_buffer.ts",
    from: "  if (size < BIG_BUFFER_BYTES) return new Uint8Array(size);",
    to: "  if (size >= 0) return new Uint8Array(size);",
    tests: ["tests/big_buffer_test.ts"],
  },
  {
    name: "filter engines: the shipped engines are not read",
    file: "services/screenshots/filter_engine.ts",
    from: "    const shipped = this.opts.shipped ?? SHIPPED_ENGINES;",
    to: "    const shipped = this.opts.shipped ?? false;",
    tests: ["tests/filter_engine_test.ts"],
  },
  {
    name: "jpeg keep: a JPEG with nothing to strip is copied anyway",
    file: "services/images/pipeline_stages.ts",
    from:
      "      if (source instanceof Uint8Array && jpegKeepsAll(source, orientation)) {",
    to: "      if (source instanceof Uint8Array && false) {",
    tests: ["tests/jpeg_keep_test.ts"],
  },
  {
    name: "jpeg keep: a comment is kept",
    file: "services/images/formats/metadata_strip.ts",
    from: "  return (isApp && !KEEP_APP.has(marker)) || marker === 0xfe;",
    to: "  return isApp && !KEEP_APP.has(marker);",
    tests: ["tests/jpeg_keep_test.ts", "tests/metadata_test.ts"],
  },
  {
    name: "body cap: a body declared past the cap is read anyway",
    file: "routes/upload.ts",
    from: "    if (declared <= cap) return;",
    to: "    if (declared > 0) return;",
    tests: ["tests/body_cap_test.ts"],
  },
  {
    name: "body cap: the request's budget does not bound the body",
    file: "services/bodies/budgets.ts",
    from: "  const together = limits.requestBytes === undefined ? Infinity : (",
    to: "  const together = limits.requestBytes !== 0 ? Infinity : (",
    tests: ["tests/body_cap_test.ts"],
  },
  {
    name: "page load: a load cut by a network change is not tried again",
    file: "services/screenshots/page_load.ts",
    from: "    if (!networkChanged(e) || Date.now() >= deadline) throw e;",
    to: "    if (networkChanged(e) || true) throw e;",
    tests: ["tests/page_load_test.ts"],
  },
  {
    name: "page load: any failure is tried again",
    file: "services/screenshots/page_load.ts",
    from:
      "    (e.details ?? []).some((d) => /ERR_NETWORK_CHANGED/.test(d.message));",
    to: "    true;",
    tests: ["tests/page_load_test.ts"],
  },
  {
    name:
      "work slots and memory admission: a waiter past the line is not refused",
    file: "services/runtime/byte_gate.ts",
    from: "      if (this.#line.length >= this.queue) throw this.#busy();",
    to: "",
    tests: ["tests/abuse_test.ts", "tests/memory_admission_test.ts"],
  },
  {
    name:
      "account export: one at a time taken after an await (two sent at once both ran)",
    file: "services/accounts/export.ts",
    from: `  running.add(userId);
  const release = () => running.delete(userId);
  try {
    return await zipOf(deps, userId, release);`,
    to: `  const release = () => running.delete(userId);
  try {
    await deps.db.selectFrom("users").select("id").execute();
    running.add(userId);
    return await zipOf(deps, userId, release);`,
    tests: ["tests/account_export_test.ts"],
  },
  {
    name:
      "resumable: an account's creations checked side by side (ten at once past a bound of three all opened)",
    file: "services/runtime/keyed_line.ts",
    from: `      await before;\n`,
    to: ``,
    tests: ["tests/keyed_line_test.ts", "tests/tus_test.ts"],
  },
  {
    name:
      "resumable: a creation that passed its check is not counted until tus has written it",
    file: "services/uploads/resumable.ts",
    from:
      `    for (const r of reserved) if (!written.has(r.id)) open.push(r);\n`,
    to: ``,
    tests: ["tests/tus_test.ts", "tests/tus_s3_test.ts"],
  },
  {
    name:
      "schedules: SCREENSHOT_SCHEDULES_MAX counted before the insert's transaction (six at once against two were all made)",
    file: "services/screenshots/schedules.ts",
    from: `    return await db.transaction().execute(async (tx) => {
      await this.#roomFor(tx, userId);`,
    to: `    await this.#roomFor(db, userId);
    return await db.transaction().execute(async (tx) => {`,
    tests: ["tests/screenshot_schedules_test.ts"],
  },
  {
    name:
      "sandbox memory: start:sandbox without glibc's fixed mapping threshold (freed buffers kept in a heap that never shrinks)",
    file: "deno.json",
    from:
      `"command": "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=262144:glibc.malloc.arena_max=1 deno run`,
    to: `"command": "deno run`,
    tests: ["tests/big_buffer_test.ts"],
  },
  {
    name:
      "sandbox memory: a tunable glibc does not know (it ignores it silently, and keeps the heap)",
    file: "deno.json",
    from: `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=262144:`,
    to: `GLIBC_TUNABLES=glibc.malloc.mmap_treshold=262144:`,
    tests: ["tests/big_buffer_test.ts"],
  },
  {
    name:
      "S3 store: a memory file's parts sent from its start each time (a corrupt original)",
    file: "services/store/s3_store.ts",
    from: `(off, len) => Promise.resolve(bytes.subarray(off, off + len)),`,
    to: `(_off, len) => Promise.resolve(bytes.subarray(0, len)),`,
    tests: ["tests/store_test.ts"],
  },
  {
    name:
      "strip in place: a range moved forward over bytes still to be read (a corrupt original)",
    file: "services/images/formats/strip_in_place.ts",
    from: `      if (out > p.from) return null;`,
    to: `      // the range check left out`,
    tests: ["tests/strip_in_place_test.ts"],
  },
  {
    name:
      "strip in place: a plan longer than the bytes (a GIF given its trailer) written past their end",
    file: "services/images/formats/strip_in_place.ts",
    from: `return out > bytes.length ? null : out;`,
    to: `return out;`,
    tests: ["tests/strip_in_place_test.ts"],
  },
  {
    name:
      "strip in place: the sizes written after (a WebP's RIFF and frame sizes) left as they were",
    file: "services/images/formats/strip_in_place.ts",
    from:
      `  for (const { offset, bytes: b } of plan.patches) bytes.set(b, offset);`,
    to: ``,
    tests: ["tests/strip_in_place_test.ts"],
  },
  {
    name:
      "strip in place: the memory file not shortened (the dropped metadata's length of old bytes stored after the image)",
    file: "services/images/pipeline_stages.ts",
    from: `  shrinkScratch(file.path, length);`,
    to: ``,
    tests: ["tests/jpeg_keep_test.ts"],
  },
  {
    name:
      "strip in place: large memory uploads stripped into a copy again (a 9 MB one with EXIF refused under MEMORY_BODY_MB=16)",
    file: "services/images/pipeline_stages.ts",
    from: `    source.length >= STRIP_IN_PLACE_MIN &&`,
    to: `    source.length >= Infinity &&`,
    tests: ["tests/jpeg_keep_test.ts"],
  },
  {
    name:
      "operator: a sign-up that lost the race to be an empty instance's admin is made a user although SIGNUP=closed",
    file: "services/accounts/accounts.ts",
    from:
      `      else if (role === "first-admin-only") throw new NotFirstAdmin();`,
    to: ``,
    tests: ["tests/signup_control_test.ts"],
  },
  {
    name:
      "upload privacy: the row inserted public whatever the upload asked (a private image public until an edit)",
    file: "services/images/pipeline.ts",
    from: `      privacy: opts.access?.privacy ?? "public",`,
    to: `      privacy: "public",`,
    tests: ["tests/upload_privacy_test.ts"],
  },
  {
    name:
      "upload privacy: a duplicate keeps its old privacy and album whatever the new upload names",
    file: "services/images/pipeline.ts",
    from:
      `    const edit: ImageEdit = { ...tighterAccess(rec.privacy, opts.access) };
    if (opts.albumId) edit.album_id = opts.albumId;`,
    to: `    const edit: ImageEdit = {};`,
    tests: ["tests/upload_privacy_test.ts"],
  },
  {
    name:
      "upload privacy: a resumable upload's privacy metadata not given to the pipeline",
    file: "services/uploads/resumable.ts",
    from: `        access: await uploadAccess(`,
    to: `        _access: await uploadAccess(`,
    tests: ["tests/upload_privacy_test.ts"],
  },
  {
    name:
      "upload privacy: a password taken from the query string (logs keep it)",
    file: "routes/upload.ts",
    from: `        form.fields.password,
      );`,
    to: `        form.fields.password ?? c.req.query("password"),
      );`,
    tests: ["tests/upload_privacy_test.ts"],
  },
  {
    name:
      "strip in place: a file shorter than a pass's first look is a RangeError (a 500), not a broken file",
    file: "services/images/formats/metadata_strip.ts",
    from: `    if (n > this.buf.length && this.f) {`,
    to: `    if (n > this.buf.length) {`,
    tests: ["tests/strip_in_place_test.ts"],
  },
  {
    name: "upload privacy: the home uploader's privacy picker is not offered",
    file: "routes/pages/assets/home.js",
    from: `    privacyChoices: !guestLife,`,
    to: `    privacyChoices: false,`,
    tests: ["tests/site_browser_test.ts"],
  },
  {
    name:
      "upload privacy: a re-upload from the site's uploader (privacy public) makes a private image public",
    file: "services/privacy/password_access.ts",
    from: `  return asked && CLOSENESS[asked.privacy] > CLOSENESS[current]`,
    to: `  return asked`,
    tests: ["tests/upload_privacy_test.ts"],
  },
  {
    name:
      "rate headers: every route listing 170 documents the per-key headers again (pages, files, the admin API)",
    file: "schemas/envelope.ts",
    from: `  return responsesFor(codes, false);`,
    to: `  return responsesFor(codes, codes.includes(170));`,
    tests: ["tests/rate_headers_test.ts"],
  },
  {
    name: "rate headers: tus's answers declare no per-key headers",
    file: "routes/tus.ts",
    from: `  const keyedHeaders = { ...tusHeaders, ...RATE_LIMIT_HEADERS };`,
    to: `  const keyedHeaders = { ...tusHeaders };`,
    tests: ["tests/rate_headers_test.ts"],
  },
  {
    name:
      "allocator: the sandbox profile started without the setting is not warned about",
    file: "services/runtime/allocator.ts",
    from: `  if (engine === "wasm" && setting.mmapThreshold === "dynamic") {`,
    to: `  if (engine === "wasm" && setting.mmapThreshold === 0) {`,
    tests: ["tests/allocator_test.ts"],
  },
  {
    name: "allocator: the older name wins over GLIBC_TUNABLES",
    file: "services/runtime/allocator.ts",
    from: `  const threshold = tunables.get("glibc.malloc.mmap_threshold") ??
    env.MALLOC_MMAP_THRESHOLD_;`,
    to: `  const threshold = env.MALLOC_MMAP_THRESHOLD_ ??
    tunables.get("glibc.malloc.mmap_threshold");`,
    tests: ["tests/allocator_test.ts"],
  },
  {
    name:
      'cold start: node_modules left to Deno\'s "auto" mode (every start re-checks the whole tree once per npm import, ~150 ms)',
    file: "deno.json",
    from: `"nodeModulesDir": "manual"`,
    to: `"nodeModulesDir": "auto"`,
    tests: ["tests/deploy_test.ts"],
  },
  {
    name:
      "cold start: the start task without its install first (a fresh clone's start finds no node_modules)",
    file: "deno.json",
    from:
      `"command": "MALLOC_ARENA_MAX=1 deno run --allow-all --v8-flags=--max-semi-space-size=1,--heap-growing-percent=50 main.ts",
      "dependencies": ["install"]`,
    to:
      `"command": "MALLOC_ARENA_MAX=1 deno run --allow-all --v8-flags=--max-semi-space-size=1,--heap-growing-percent=50 main.ts"`,
    tests: ["tests/deploy_test.ts"],
  },
  {
    name:
      "job cancel: only a queued job may be cancelled (a running one runs on to its end)",
    file: "services/screenshots/jobs.ts",
    from: `.where("status", "in", ["queued", "running"]).returningAll()`,
    to: `.where("status", "in", ["queued"]).returningAll()`,
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name:
      "job cancel: an instance without a browser takes capture jobs once its queue starts (each fails 240)",
    file: "services/screenshots/jobs.ts",
    from: `    if (this.deps.runs) {`,
    to: `    if (this.deps.runs || true) {`,
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name:
      "job cancel: a cancel made on another instance is never seen by the one running the job",
    file: "services/screenshots/jobs.ts",
    from: `      if (row?.status === "cancelled") stop.abort(cancelled());`,
    to: `      if (row?.status === "cancelled-never") stop.abort(cancelled());`,
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name:
      "job cancel: the browser pool ignores the capture's signal (the page stays open to its deadline)",
    file: "services/screenshots/chromium.ts",
    from: `            if (!signal) return;`,
    to: `            if (!signal || signal) return;`,
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name:
      "engine load: sharp loaded before deprecation warnings are silenced (DEP0104 at every sandbox start)",
    file: "services/images/sharp_module.ts",
    from: `import "./quiet_deprecations.ts";\nimport sharp from "sharp";`,
    to: `import sharp from "sharp";\nimport "./quiet_deprecations.ts";`,
    tests: ["tests/sharp_module_test.ts"],
  },
  {
    name:
      "engine load: deprecation warnings left silenced after sharp's load (every later one hidden)",
    file: "services/images/sharp_module.ts",
    from: `\nendQuiet();\n`,
    to: `\nvoid endQuiet;\n`,
    tests: ["tests/sharp_module_test.ts"],
  },
  {
    name:
      "batch cancel: the jobs that had ended are marked cancelled too (a done capture's record rewritten)",
    file: "services/screenshots/jobs.ts",
    from:
      `      .where("status", "in", ["queued", "running"]).returning("id").execute();`,
    to: `      .returning("id").execute();`,
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name:
      "disabled account: its queued capture jobs still run and store images",
    file: "services/screenshots/jobs.ts",
    from:
      `    if (!await activeOwner(db, row.user_id)) return await this.#refuse(id, req);`,
    to: `    if (!await activeOwner(db, row.user_id) && false) return;`,
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name:
      "disabled account: counted among the active ones (its schedules' timer still queues captures, its queued jobs run)",
    file: "services/accounts/accounts.ts",
    from:
      `return db.selectFrom("users").select("id").where("disabled_at", "is", null)`,
    to: `return db.selectFrom("users").select("id")`,
    tests: [
      "tests/screenshot_schedules_test.ts",
      "tests/screenshot_jobs_test.ts",
    ],
  },
  {
    name:
      "disabled account: its running capture goes on (the row's poll reads only the job's status)",
    file: "services/screenshots/jobs.ts",
    from: `      else if (row && !row.active) stop.abort(new OwnerDisabled());`,
    to: `      else if (row && false) stop.abort(new OwnerDisabled());`,
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name:
      "job worker: started as the app is made (a cold start's first capture waits on pg-boss's start)",
    file: "app.ts",
    from: `  if (deps.screenshotter) {
    workerStarters.set(app, () =>`,
    to: `  if (deps.screenshotter) {
    schedules.start().catch(() => {});
    workerStarters.set(app, () =>`,
    tests: ["tests/screenshot_jobs_test.ts"],
  },
  {
    name:
      "job worker: main.ts never starts it (an instance runs only the jobs it was asked to queue)",
    file: "main.ts",
    from:
      `workerTimer = setTimeout(() => startJobWorker(app), JOB_WORKER_DELAY_MS);`,
    to: `workerTimer = setTimeout(() => {}, JOB_WORKER_DELAY_MS);`,
    tests: ["tests/screenshot_jobs_kill_test.ts"],
  },
];

const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const checkOnly = Deno.args.includes("--check");
const only = Deno.args.find((a) => !a.startsWith("--"))?.toLowerCase();
const chosen = MUTATIONS.filter((m) =>
  !only || m.name.toLowerCase().includes(only)
);

/**
 * The entries whose text to replace is not in their file exactly once: stale (the code
 * moved on) or ambiguous. Such an entry would test nothing, so it is an error of its own.
 */
async function staleEntries(dir: string, list: Mutation[]): Promise<string[]> {
  const stale: string[] = [];
  for (const m of list) {
    const text = await Deno.readTextFile(`${dir}/${m.file}`).catch(() => "");
    const count = text.split(m.from).length - 1;
    if (count !== 1) {
      stale.push(`${m.name}: its text occurs ${count} times in ${m.file}`);
    }
  }
  return stale;
}

if (chosen.length === 0) {
  // Else the unmutated run below would get no file and run the whole tests folder.
  console.log(`no mutation entry's name contains "${only}"`);
  Deno.exit(2);
}

if (checkOnly) {
  // `deno task mutate --check` (CI): every entry still names code that exists, once.
  const stale = await staleEntries(root, chosen);
  for (const line of stale) console.log(`STALE     ${line}`);
  console.log(
    `${
      chosen.length - stale.length
    } of ${chosen.length} mutation entries match the code`,
  );
  Deno.exit(stale.length ? 1 : 0);
}

/** A scratch copy of the working tree (node_modules linked, not copied). */
async function scratchCopy(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "imagehost-mutate-" });
  const out = await new Deno.Command("bash", {
    args: [
      "-c",
      `tar -C "${root}" --exclude=./node_modules --exclude=./.git --exclude=./data -cf - . | tar -C "${dir}" -xf - && ln -s "${root}/node_modules" "${dir}/node_modules"`,
    ],
  }).output();
  if (!out.success) throw new Error("cannot copy the tree");
  return dir;
}

async function runTests(dir: string, tests: string[]): Promise<boolean> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["test", "-A", "--no-check", ...tests],
    cwd: dir,
    // Not CI=true: the PostgreSQL pass needs TEST_DATABASE_URL, and PGlite is enough to
    // tell a caught mutation from a survivor.
    env: { NO_COLOR: "1" },
    stdout: "null",
    stderr: "null",
    signal: AbortSignal.timeout(15 * 60_000),
  }).output().catch(() => ({ success: false }));
  return out.success;
}

{
  const stale = await staleEntries(root, chosen);
  if (stale.length) {
    for (const line of stale) console.log(`STALE     ${line}`);
    console.log(
      "stale entries are errors: fix them first (deno task mutate --check)",
    );
    Deno.exit(2);
  }
}
const dir = await scratchCopy();
let survived = 0;
try {
  // The tests must pass without any mutation, or a "caught" would mean nothing.
  const files = [...new Set(chosen.flatMap((m) => m.tests))];
  if (!await runTests(dir, files)) {
    throw new Error(`the tests fail without any mutation: ${files.join(" ")}`);
  }
  for (const m of chosen) {
    const path = `${dir}/${m.file}`;
    const original = await Deno.readTextFile(path);
    let mutated = original.replace(m.from, m.to);
    if (m.to.includes("raw(") && !/import \{[^}]*\braw\b/.test(mutated)) {
      mutated = `import { raw } from "hono/html";\n${mutated}`;
    }
    if (m.to.includes("netConnect") && !/netConnect/.test(original)) {
      mutated = `import { connect as netConnect } from "node:net";\n${mutated}`;
    }
    await Deno.writeTextFile(path, mutated);
    const t = performance.now();
    const passed = await runTests(dir, m.tests);
    await Deno.writeTextFile(path, original);
    const secs = ((performance.now() - t) / 1000).toFixed(0);
    if (passed) survived++;
    console.log(
      `${passed ? "SURVIVED" : "caught  "}  ${m.name}  (${
        m.tests.join(" ")
      }, ${secs} s)`,
    );
  }
} finally {
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
console.log(
  `\n${chosen.length - survived} of ${chosen.length} mutations caught`,
);
if (survived) Deno.exit(1);
