-- Password-protected images and albums (issue #37): privacy 'password' keeps the scrypt
-- hash of its password here. Changing the password changes the hash (a new salt), and
-- every signed file URL and unlock cookie covers the hash, so they all stop working.
alter table images add column password_hash text;
alter table albums add column password_hash text;
-- Secrets every instance shares (the HMAC key of signed file URLs and unlock cookies):
-- made once, by whichever instance needs one first.
create table secrets (
  name text primary key,
  value text not null
);
