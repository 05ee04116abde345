-- Signed webhooks of asynchronous captures (issue #50). Each account signs with its own
-- secret (made at first use, shown on /account); every delivery attempt is kept, so an
-- integrator can see what was sent, when, and what their server answered.
alter table users add column webhook_secret text;

create table webhook_deliveries (
  id bigint generated always as identity primary key,
  job_id text not null references screenshot_jobs (id) on delete cascade,
  user_id text not null references users (id) on delete cascade,
  url text not null,
  attempt integer not null,
  ok boolean not null,
  status_code integer,
  error text,
  at timestamptz not null default now()
);
create index webhook_deliveries_job on webhook_deliveries (job_id, id);
create index webhook_deliveries_user on webhook_deliveries (user_id, id desc);
