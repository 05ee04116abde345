-- Lists of a user's images sorted by size or by name (GET /api/1/images?sort=): each
-- has its index, so a page is a short index walk however many images there are (the
-- newest-first order has had its own since 001).
create index images_user_size on images (user_id, size desc, id desc) where deleted_at is null;
create index images_user_name on images (user_id, lower(title), id) where deleted_at is null;
