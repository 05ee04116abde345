-- Variants made on demand (transform URLs): one row per stored variant, written after its
-- bytes. Deleting an image removes its variants through these rows; the hourly trim
-- removes the oldest made once they pass IMAGE_VARIANTS_MB; a variant whose bytes are
-- gone is made again when next asked for.
create table image_variants (
  key text primary key,
  image_id text not null,
  bytes bigint not null,
  created_at timestamptz not null default now()
);
create index image_variants_image on image_variants (image_id);
create index image_variants_created on image_variants (created_at);
