-- Title search by words (GET /api/1/images?q=): each word is a `lower(title) like
-- '%word%'`, which only a trigram index serves (without one, 100,000 images took 37-54 ms
-- a search on PostgreSQL). pg_trgm ships with PostgreSQL and is a trusted extension (a
-- database owner may create it); it goes in `public`, named so explicitly, so it is one
-- per database whichever schema is first in the search path.
create extension if not exists pg_trgm schema public;
create index images_title_trgm on images using gin (lower(title) public.gin_trgm_ops)
  where deleted_at is null;
