-- Scheduled captures (issue #50): a request run on a cron expression, each run a job like
-- any other. With notify_on_change the webhook is called only when a run's image differs
-- from the previous run's by more than change_threshold (a share of the pixels).
create table screenshot_schedules (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  cron text not null,
  request jsonb not null,
  paused boolean not null default false,
  notify_on_change boolean not null default false,
  change_threshold real not null default 0.001,
  last_image_id text,
  runs integer not null default 0,
  last_run_at timestamptz,
  created_at timestamptz not null default now()
);
create index screenshot_schedules_user on screenshot_schedules (user_id, created_at desc);

alter table screenshot_jobs add column schedule_id text;
-- A scheduled run with notify_on_change: the share of pixels that differ from the run before.
alter table screenshot_jobs add column changed real;
