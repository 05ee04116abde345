-- Variants made on demand (transform URLs): one row per variant. An instance about to
-- make one first takes its row as a lease (state 'making', lease_until), so the other
-- instances wait for its bytes instead of making it again; once stored it is 'ready' with
-- its size. Deleting an image removes its variants through these rows; the hourly trim
-- removes the oldest made once they pass IMAGE_VARIANTS_MB; a variant whose bytes are
-- gone is made again when next asked for.
create table image_variants (
  key text primary key,
  image_id text not null,
  bytes bigint not null default 0,
  state text not null default 'ready',
  lease_until timestamptz,
  created_at timestamptz not null default now()
);
create index image_variants_image on image_variants (image_id);
create index image_variants_created on image_variants (created_at);
