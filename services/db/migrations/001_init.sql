create table users (
  id text primary key,
  email text not null,
  password_hash text not null,
  created_at timestamptz not null default now(),
  disabled_at timestamptz,
  deleted_at timestamptz
);
create unique index users_email_live on users (lower(email)) where deleted_at is null;

create table api_keys (
  id text primary key,
  user_id text not null references users(id),
  label text not null,
  key_hash text not null unique,
  last4 text not null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
create index api_keys_user on api_keys (user_id);

create table sessions (
  id_hash text primary key,
  user_id text not null references users(id),
  csrf_token text not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);

create table login_failures (
  id bigserial primary key,
  email text not null,
  at timestamptz not null default now()
);
create index login_failures_email on login_failures (lower(email), at);

create table images (
  id text primary key,
  user_id text not null references users(id),
  title text not null,
  ext text not null,
  mime text not null,
  size bigint not null,
  width integer not null,
  height integer not null,
  sha256 text not null,
  thumb_ext text,
  medium_ext text,
  source text not null default 'upload',
  delete_token text not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz,
  deleted_at timestamptz
);
create index images_user on images (user_id, created_at desc);
create unique index images_user_sha_live on images (user_id, sha256) where deleted_at is null;
create index images_expires on images (expires_at) where deleted_at is null and expires_at is not null;
