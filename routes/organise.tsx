import { albumOnSite } from "./pages/site_links.ts";
import type { App } from "./env.ts";
import type { AppDeps } from "./deps.ts";
import type { ImageRowCache } from "../services/images/image_cache.ts";
import {
  editImage,
  findLiveImage,
  type ImageEdit,
} from "../services/images/records.ts";
import {
  albumForImages,
  createAlbum,
  deleteAlbum,
  listAlbums,
  moveAlbum,
  toAlbumRecord,
  updateAlbum,
} from "../services/albums/albums.ts";
import { AlbumCreateSchema, AlbumPatchSchema } from "../schemas/album.ts";
import { ImagePatchSchema } from "../schemas/image.ts";
import { passwordEdit } from "../services/privacy/password_access.ts";
import { formCsrf, Layout, pageSecurity } from "./pages/layout.tsx";
import { PrivacySelect, TitleFields } from "./pages/fields.tsx";
import { requireSessionForm, sessionUser } from "./session.ts";
import { ApiError } from "../schemas/errors.ts";

/**
 * Organising from the site (issue #37): the Albums page (yours, and a form to make one),
 * moving the images ticked on My images into an album, and editing one image from its
 * viewer page. Each is a plain session form (works without scripts), as My images'
 * delete is; each changes only the signed-in user's own images and albums.
 */
export function registerOrganiseRoutes(
  app: App,
  deps: AppDeps,
  rowCache: ImageRowCache,
) {
  const { db } = deps.database;
  const { config, clock } = deps;
  for (const p of ["/albums", "/albums/*"]) {
    app.use(p, pageSecurity(config), formCsrf(config));
  }

  /**
   * Applies `edit` to each posted image (`id`, repeatable, at most 500) that is the
   * signed-in user's own and live; others are skipped. Returns how many changed.
   */
  const editOwnImages = async (
    r: { user: { userId: string }; all(name: string): string[] },
    edit: ImageEdit,
  ): Promise<number> => {
    let n = 0;
    for (const id of [...new Set(r.all("id"))].slice(0, 500)) {
      // A ticked image taken down meanwhile is skipped like a deleted one.
      const row = await findLiveImage(db, id, clock, { quiet: true });
      if (!row || row.user_id !== r.user.userId) continue;
      await editImage(db, id, edit);
      rowCache.invalidate(id);
      n++;
    }
    return n;
  };

  app.get("/albums", async (c) => {
    const user = await sessionUser(c, deps);
    if (!user) return c.redirect("/login", 303);
    const deleted = c.req.query("deleted");
    const deletedImages = deleted === undefined
      ? undefined
      : Number.parseInt(deleted) || 0;
    const albums = (await listAlbums(db, user.userId, clock)).map((v) =>
      albumOnSite(config, toAlbumRecord(config, v))
    );
    c.header("Cache-Control", "no-store");
    return c.html(
      <Layout title="Albums" user={user} current="/albums">
        <h1>Albums</h1>
        {deletedImages !== undefined && (
          <p class="notice" role="status">
            Deleted the album{deletedImages > 0
              ? ` and its ${deletedImages} image${
                deletedImages === 1 ? "" : "s"
              }`
              : ""}.
          </p>
        )}
        {albums.length === 0
          ? (
            <p class="notice">
              No albums yet. Make one below, then move images into it from{" "}
              <a href="/images">My images</a>.
            </p>
          )
          : (
            <ul class="grid">
              {albums.map((a) => (
                <li class="card">
                  <a href={a.url_viewer}>
                    {a.cover_url
                      ? (
                        <img
                          src={a.cover_url}
                          alt={`Cover of ${a.title}`}
                          loading="lazy"
                        />
                      )
                      : <span class="muted">(empty)</span>}
                  </a>
                  <div class="body">
                    <a class="title" href={a.url_viewer}>{a.title}</a>
                    <span class="muted">
                      {a.image_count === 1
                        ? "1 image"
                        : `${a.image_count} images`}
                      {a.privacy === "public" ? "" : ` · ${a.privacy}`}
                    </span>
                    <a
                      class="button secondary"
                      href={`/images?album=${a.id}`}
                    >
                      Manage images
                    </a>
                    <form method="post" action="/albums/order" class="inline">
                      <input
                        type="hidden"
                        name="_csrf"
                        value={user.csrfToken}
                      />
                      <input type="hidden" name="id" value={a.id} />
                      <button
                        type="submit"
                        class="secondary"
                        name="dir"
                        value="up"
                        aria-label={`Move ${a.title} up`}
                      >
                        ↑
                      </button>
                      <button
                        type="submit"
                        class="secondary"
                        name="dir"
                        value="down"
                        aria-label={`Move ${a.title} down`}
                      >
                        ↓
                      </button>
                    </form>
                  </div>
                </li>
              ))}
            </ul>
          )}
        <h2>New album</h2>
        <form method="post" action="/albums/new">
          <input type="hidden" name="_csrf" value={user.csrfToken} />
          <TitleFields prefix="album" />
          <PrivacySelect id="album-privacy" />
          <button type="submit">Create album</button>
        </form>
      </Layout>,
    );
  });

  app.post("/albums/new", async (c) => {
    const r = await requireSessionForm(c, deps);
    if (r instanceof Response) return r;
    const parsed = AlbumCreateSchema.safeParse({
      title: r.form.title ?? "",
      ...(r.form.description ? { description: r.form.description } : {}),
      ...(r.form.privacy ? { privacy: r.form.privacy } : {}),
      ...passwordField(r.form),
    });
    if (!parsed.success) throw invalid(parsed.error.issues);
    await createAlbum(db, r.user.userId, parsed.data);
    return c.redirect("/albums", 303);
  });

  /** Changes the title, description and privacy of one of the user's albums. */
  app.post("/albums/edit", async (c) => {
    const r = await requireSessionForm(c, deps);
    if (r instanceof Response) return r;
    const parsed = AlbumPatchSchema.safeParse({
      title: r.form.title ?? "",
      description: r.form.description ?? "",
      ...(r.form.privacy ? { privacy: r.form.privacy } : {}),
      ...passwordField(r.form),
    });
    if (!parsed.success) throw invalid(parsed.error.issues);
    const row = await updateAlbum(
      db,
      r.user.userId,
      r.form.id ?? "",
      parsed.data,
      clock,
    );
    return c.redirect(`/a/${row.id}`, 303);
  });

  /**
   * Deletes one of the user's albums; its images stay, in no album, unless
   * `with_images` is ticked.
   */
  app.post("/albums/delete", async (c) => {
    const r = await requireSessionForm(c, deps);
    if (r instanceof Response) return r;
    const deleted = await deleteAlbum(
      db,
      deps.store,
      clock,
      r.user.userId,
      r.form.id ?? "",
      r.form.with_images === "on",
    );
    for (const id of deleted) rowCache.invalidate(id);
    // Said on the Albums page: the album went, and how many images with it.
    return c.redirect(`/albums?deleted=${deleted.length}`, 303);
  });

  /** Makes one of the album's images (`image`) its cover, from the album's page. */
  app.post("/albums/cover", async (c) => {
    const r = await requireSessionForm(c, deps);
    if (r instanceof Response) return r;
    const row = await updateAlbum(db, r.user.userId, r.form.id ?? "", {
      cover_image_id: r.form.image ?? "",
    }, clock);
    return c.redirect(`/a/${row.id}`, 303);
  });

  /**
   * Moves one of the user's albums (`id`) up or down (`dir`) among them on the Albums
   * page: the albums are numbered in the order shown, and the two swap places.
   */
  app.post("/albums/order", async (c) => {
    const r = await requireSessionForm(c, deps);
    if (r instanceof Response) return r;
    await moveAlbum(
      db,
      r.user.userId,
      r.form.id ?? "",
      r.form.dir === "up" ? "up" : "down",
      clock,
    );
    return c.redirect("/albums", 303);
  });

  /**
   * Moves the posted images (`id`, repeatable) of the signed-in user into `album` (one
   * of theirs; empty: into none), then goes back to the My images page they were on.
   */
  app.post("/images/move", async (c) => {
    const r = await requireSessionForm(c, deps);
    if (r instanceof Response) return r;
    const albumId = r.form.album
      ? (await albumForImages(db, r.user.userId, r.form.album)).id
      : null;
    const moved = await editOwnImages(r, { album_id: albumId });
    return c.redirect(backToImages(r.form.back, "moved", moved), 303);
  });

  /**
   * Sets who sees the posted images (`id`, repeatable) of the signed-in user, then goes
   * back to the My images page they were on.
   */
  app.post("/images/privacy", async (c) => {
    const r = await requireSessionForm(c, deps);
    if (r instanceof Response) return r;
    const parsed = PrivacyForm.safeParse({
      privacy: r.form.privacy,
      ...passwordField(r.form),
    });
    if (!parsed.success) throw invalid(parsed.error.issues);
    // One hash for the whole selection: a password for each would cost a hash each.
    const changed = await editOwnImages(
      r,
      await passwordEdit(
        { privacy: "public", password_hash: null },
        parsed.data.privacy,
        parsed.data.password,
      ),
    );
    return c.redirect(backToImages(r.form.back, "changed", changed), 303);
  });

  /**
   * Sets when the posted images (`id`, repeatable) of the signed-in user are deleted
   * (`expiration` seconds from now; 0 keeps them for good), then goes back to the My
   * images page they were on.
   */
  app.post("/images/expiry", async (c) => {
    const r = await requireSessionForm(c, deps);
    if (r instanceof Response) return r;
    const expiresAt = formExpiry(r.form.expiration ?? "0", clock.now());
    const set = await editOwnImages(r, { expires_at: expiresAt ?? null });
    return c.redirect(backToImages(r.form.back, "expiry", set), 303);
  });

  /**
   * Changes one image's title, description, album, who sees it and when it is deleted,
   * from its viewer page
   * or My images' inline form (`back`: the page to go back to).
   */
  app.post("/images/edit", async (c) => {
    const r = await requireSessionForm(c, deps);
    if (r instanceof Response) return r;
    const row = await findLiveImage(db, r.form.id ?? "", clock);
    if (!row || row.user_id !== r.user.userId) throw new ApiError(404);
    // The API's own rules for each field (title 1–255 once trimmed, description up to
    // 5000, privacy and its password).
    const parsed = EditForm.safeParse({
      title: r.form.title ?? "",
      description: r.form.description ?? "",
      privacy: r.form.privacy ?? row.privacy,
      ...passwordField(r.form),
    });
    if (!parsed.success) throw invalid(parsed.error.issues);
    const albumId = r.form.album
      ? (await albumForImages(db, r.user.userId, r.form.album)).id
      : null;
    const { title, description, privacy, password } = parsed.data;
    const expiresAt = formExpiry(r.form.expiration, clock.now());
    await editImage(db, row.id, {
      title,
      description,
      album_id: albumId,
      ...await passwordEdit(row, privacy, password),
      ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
    });
    rowCache.invalidate(row.id);
    // From My images' inline form: back to the page it was on.
    return c.redirect(
      r.form.back ? backToImages(r.form.back, "edited", 1) : `/i/${row.id}`,
      303,
    );
  });
}

/**
 * A form's `expiration` (seconds from `now`, the API's bounds; 0 for good) as the row's
 * `expires_at`: undefined when not given (left as it is), null to keep for good, 160 for
 * anything else.
 */
function formExpiry(
  raw: string | undefined,
  now: Date,
): Date | null | undefined {
  if (raw === undefined || raw === "") return undefined;
  const parsed = ImagePatchSchema.shape.expiration.safeParse(
    /^[0-9]{1,9}$/.test(raw) ? Number(raw) : NaN,
  );
  if (!parsed.success || parsed.data === undefined) {
    throw invalid(
      parsed.success ? [] : parsed.error.issues.map((i) => ({
        ...i,
        path: ["expiration"],
      })),
    );
  }
  return parsed.data === 0
    ? null
    : new Date(now.getTime() + parsed.data * 1000);
}

/** Who sees the ticked images (My images): a privacy, and the password of `password`. */
const PrivacyForm = ImagePatchSchema.pick({ privacy: true, password: true })
  .required({ privacy: true });

/** One image's edit form (its viewer page, or its card on My images). */
const EditForm = ImagePatchSchema.pick({
  title: true,
  description: true,
  privacy: true,
  password: true,
}).required({ title: true, description: true, privacy: true });

/**
 * The password field of a privacy form: an empty field means none given (it keeps a
 * password image's password). With any other privacy it is not read: browsers fill a
 * saved password into it by themselves, and "Create album" (public) was refused for it.
 */
function passwordField(form: Record<string, string | undefined>) {
  return form.password && form.privacy === "password"
    ? { password: form.password }
    : {};
}

/** 160 for a form the schema refused, naming each field. */
function invalid(
  issues: { path: PropertyKey[]; message: string }[],
): ApiError {
  return new ApiError(160, {
    details: issues.map((i) => ({
      path: i.path.join("."),
      message: i.message,
    })),
  });
}

/** Where a My images form goes back to (one of our /images pages only), saying how many. */
function backToImages(
  back: string | undefined,
  what: "moved" | "changed" | "edited" | "expiry",
  n: number,
): string {
  const u = new URL(
    back && /^\/images(\?|$)/.test(back) ? back : "/images",
    "http://x",
  );
  u.searchParams.set(what, String(n));
  return `${u.pathname}${u.search}`;
}
