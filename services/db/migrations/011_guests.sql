-- Guest uploads (issue #37): with GUEST_UPLOADS=on a browser without an account uploads
-- as a guest, an account without e-mail or password that only its browser's `guest`
-- cookie names (kept here as a hash). Signing up (or logging in) in that browser moves its
-- images to the account and deletes the guest.
alter table users add column guest_token_hash text;
create unique index users_guest on users (guest_token_hash)
  where guest_token_hash is not null;
