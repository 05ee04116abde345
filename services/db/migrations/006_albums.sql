-- Albums (issue #37): a user's named groups of images, with one link to share. An image
-- is in at most one album (Chevereto's model); deleting an album leaves its images, out
-- of any album, unless asked to delete them too. `position` orders a user's albums.
-- `privacy` is 'public' (listed) or 'unlisted' (the link works, never listed publicly).
create table albums (
  id text primary key,
  user_id text not null references users(id),
  title text not null,
  description text not null default '',
  privacy text not null default 'public',
  cover_image_id text,
  position integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index albums_user on albums (user_id, position, created_at desc);

alter table images add column album_id text references albums(id) on delete set null;
alter table images add column description text not null default '';
create index images_album on images (album_id, created_at desc) where deleted_at is null;
