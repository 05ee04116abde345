-- Batches of asynchronous captures (issue #50): one id for many jobs, followed together.
alter table screenshot_jobs add column batch_id text;
-- Its place in the batch's requests (its jobs share one created_at: one transaction).
alter table screenshot_jobs add column batch_index integer;
create index screenshot_jobs_batch on screenshot_jobs (batch_id, batch_index)
  where batch_id is not null;
