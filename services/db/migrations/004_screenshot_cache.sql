-- Screenshot results a request may reuse (`cache` seconds): one row per user and normalised
-- request. A shared result points at its image (reused only while that image is live); an
-- inline one keeps its bytes (at most a few MB). Expired rows are swept hourly.
create table screenshot_cache (
  user_id text not null,
  request_hash text not null,
  result text not null,
  image_id text,
  body bytea,
  expires_at timestamptz not null,
  primary key (user_id, request_hash)
);
create index screenshot_cache_expires on screenshot_cache (expires_at);
