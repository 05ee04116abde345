create table rate_limits (
  key_id text not null,
  window_start timestamptz not null,
  count integer not null,
  primary key (key_id, window_start)
);
create index rate_limits_window on rate_limits (window_start);
