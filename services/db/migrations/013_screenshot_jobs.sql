-- Asynchronous captures (issue #50). The account's view of each job: what was asked, where
-- it is, and how it ended. The queue itself (fetching, retries, a killed instance's jobs
-- handed to another) is pg-boss's, in its own schema; a job here and there share one id.
create table screenshot_jobs (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  -- queued, running, done, failed or cancelled
  status text not null default 'queued',
  request jsonb not null,
  -- done: the capture as the synchronous call answers it
  result jsonb,
  image_id text,
  error_code integer,
  error_message text,
  attempts integer not null default 0,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  finished_at timestamptz
);
create index screenshot_jobs_user on screenshot_jobs (user_id, created_at desc, id);
