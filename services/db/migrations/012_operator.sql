-- The operator's console (issue #47). Roles: 'admin' or 'user'; the first account made on
-- an empty instance is an admin (services/admin/). Per-account quota overrides: null means
-- the instance's default (USER_STORAGE_MB, USER_IMAGES_MAX, SCREENSHOTS_PER_MONTH), 0 none.
alter table users add column role text not null default 'user';
alter table users add column quota_storage_mb integer;
alter table users add column quota_images integer;
alter table users add column quota_screenshots integer;

-- A taken-down image keeps its row (deleted_at set, so nothing lists or serves it) and
-- answers 451 at every URL form; its SHA-256 goes into blocked_hashes.
alter table images add column taken_down_at timestamptz;
create index images_taken_down on images (id) where taken_down_at is not null;

-- Bytes that may never be stored again, by anyone. Checked by the insert itself (the
-- trigger below), so no upload path can store them and no round trip is added.
create table blocked_hashes (
  sha256 text primary key,
  image_id text,
  reason text not null default '',
  created_at timestamptz not null default now()
);

create function refuse_blocked_image() returns trigger language plpgsql as $$
begin
  if exists (select 1 from blocked_hashes where sha256 = new.sha256) then
    raise exception 'blocked content %', new.sha256 using errcode = 'P0451';
  end if;
  return new;
end $$;
create trigger images_refuse_blocked before insert on images
  for each row execute function refuse_blocked_image();

-- Bytes an upload has promised to store, counted with the live images against a storage
-- or image-count quota. Taken under the user's row lock; a crashed upload's lapses.
create table quota_holds (
  id text primary key,
  user_id text not null,
  bytes bigint not null,
  expires_at timestamptz not null
);
create index quota_holds_user on quota_holds (user_id);

-- Captures counted per account and calendar month (UTC), against SCREENSHOTS_PER_MONTH.
create table screenshot_usage (
  user_id text not null,
  month text not null,
  count integer not null default 0,
  primary key (user_id, month)
);

-- Sign-up by invitation (SIGNUP=invite): each link is a token, stored hashed.
create table invites (
  id text primary key,
  token_hash text not null unique,
  created_by text not null,
  max_uses integer not null,
  uses integer not null default 0,
  expires_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);

-- Reports of images by anyone; the reporter's address is kept only as a hash.
create table reports (
  id text primary key,
  image_id text not null,
  reason text not null,
  note text not null default '',
  reporter_hash text not null,
  state text not null default 'open',
  created_at timestamptz not null default now(),
  resolved_at timestamptz,
  resolved_by text
);
create index reports_open on reports (created_at) where state = 'open';

-- Every admin action: who, what, on which target, when and from where.
create table audit_log (
  id bigserial primary key,
  actor_id text not null,
  actor_email text not null,
  action text not null,
  target text not null default '',
  details text not null default '',
  address text not null default '',
  at timestamptz not null default now()
);
create index audit_log_at on audit_log (at desc);
