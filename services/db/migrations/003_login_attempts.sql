-- One counter row per e-mail, bumped atomically before the password is checked, so that
-- concurrent attempts (on any number of instances) can never check more passwords than
-- LOGIN_MAX_FAILURES in a window. Replaces the append-only failure log, whose
-- count-then-insert let 40 concurrent attempts check 21-24 passwords.
create table login_attempts (
  email text primary key,
  window_start timestamptz not null,
  attempts integer not null
);
drop table login_failures;
