/**
 * Form fields the organising forms share (an image's edit, an album's new and edit
 * forms): the title and description, and who sees an album. One shape, so their labels,
 * limits and ids stay the same everywhere.
 */

/** Title (1–255 characters) and description (up to 5000) of an image or an album. */
export function TitleFields(
  props: { prefix: string; title?: string; description?: string },
) {
  return (
    <>
      <label for={`${props.prefix}-title`}>Title</label>
      <input
        id={`${props.prefix}-title`}
        name="title"
        type="text"
        required
        maxlength={255}
        value={props.title}
      />
      <label for={`${props.prefix}-description`}>
        Description{props.description === undefined ? " (optional)" : ""}
      </label>
      <textarea
        id={`${props.prefix}-description`}
        name="description"
        maxlength={5000}
      >
        {props.description ?? ""}
      </textarea>
    </>
  );
}

/**
 * Who sees an album or an image: anyone with its link (and listed), anyone with its link
 * (never listed to others), its owner alone, or whoever gives its password (the field
 * below the choice; left empty, a password item keeps the password it has).
 */
export function PrivacySelect(
  props: { id: string; value?: string; image?: boolean; compact?: boolean },
) {
  const value = props.value ?? "public";
  const listed = props.image ? "and on its album's page" : "and listed";
  const choices: [string, string, string][] = [
    ["public", "Public", `anyone with the link, ${listed}`],
    ["unlisted", "Unlisted", "anyone with the link, never listed"],
    ["private", "Private", "only you"],
    ["password", "Password", "whoever gives the password below"],
  ];
  // In a card (`compact`) the word alone: a phone's narrow card cut "Public: anyone…" to
  // "Public: anyor". The whole sentence stays the option's title.
  return (
    <>
      <label for={props.id}>Who sees it</label>
      <select id={props.id} name="privacy">
        {choices.map(([v, word, who]) => (
          <option
            value={v}
            selected={value === v}
            title={props.compact ? `${word}: ${who}` : undefined}
          >
            {props.compact ? word : `${word}: ${who}`}
          </option>
        ))}
      </select>
      <label for={`${props.id}-password`}>
        Password{value === "password"
          ? " (leave empty to keep the current one)"
          : " (only for Password)"}
      </label>
      <input
        id={`${props.id}-password`}
        name="password"
        type="password"
        minlength={4}
        maxlength={128}
        autocomplete="new-password"
      />
    </>
  );
}

/** The lifetimes the site offers (seconds; 0: kept for good), as the uploader's picker. */
export const EXPIRY_CHOICES: [number, string][] = [
  [0, "Never: keep it"],
  [3600, "1 hour"],
  [86400, "1 day"],
  [604800, "1 week"],
  [2_592_000, "30 days"],
  [15_552_000, "180 days"],
];

/**
 * When an image is deleted, from now (`expiration`, seconds; 0 keeps it for good). With
 * `keep`, a first choice leaves it as it is (an edit form that changes other things).
 */
export function ExpirySelect(props: { id: string; keep?: boolean }) {
  return (
    <>
      <label for={props.id}>Delete after</label>
      <select id={props.id} name="expiration">
        {props.keep && <option value="" selected>As it is</option>}
        {EXPIRY_CHOICES.map(([s, label]) => (
          <option value={String(s)}>{label}</option>
        ))}
      </select>
    </>
  );
}

/**
 * The owner's edit form of one image (POST /images/edit): title, description, who sees it
 * (with its password) and album. Its fields' ids start with `prefix` (`edit` on the
 * viewer, `edit-<id>` in each card of My images); `back` is the page to come back to.
 */
export function ImageEditForm(props: {
  csrfToken: string;
  rec: {
    id: string;
    title: string;
    description: string;
    privacy: string;
    album_id: string | null;
  };
  albums: { id: string; title: string }[];
  prefix: string;
  back?: string;
  /** In a card of My images: short choices (see PrivacySelect). */
  compact?: boolean;
}) {
  const { rec, prefix } = props;
  return (
    <form method="post" action="/images/edit">
      <input type="hidden" name="_csrf" value={props.csrfToken} />
      <input type="hidden" name="id" value={rec.id} />
      {props.back && <input type="hidden" name="back" value={props.back} />}
      <TitleFields
        prefix={prefix}
        title={rec.title}
        description={rec.description}
      />
      <PrivacySelect
        id={`${prefix}-privacy`}
        value={rec.privacy}
        image
        compact={props.compact}
      />
      <label for={`${prefix}-album`}>Album</label>
      <select id={`${prefix}-album`} name="album">
        <option value="" selected={!rec.album_id}>No album</option>
        {props.albums.map((a) => (
          <option value={a.id} selected={a.id === rec.album_id}>
            {a.title}
          </option>
        ))}
      </select>
      <ExpirySelect id={`${prefix}-expiration`} keep />
      <button type="submit">Save</button>
    </form>
  );
}
