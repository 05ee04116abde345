-- Who may see an image (issue #37): 'public' (the default: its links work for anyone),
-- 'unlisted' (its links work, but it is never listed to others, an album's page
-- included) or 'private' (only its owner, signed in or with a key; 404 to everyone
-- else, on every route). Albums take 'private' too (their page is then the owner's
-- alone).
alter table images add column privacy text not null default 'public';
