-- 0006 dashboard indexes: the operator dashboard's feed filters and listings read through
-- indexes instead of walking a space's whole feed or every token. Plain CREATE INDEX, so the
-- same file applies on SQLite and D1.

-- The feed filtered by producer or by item type, newest first.
CREATE INDEX feed_items_space_producer ON feed_items (space_id, producer_id, sequence);
CREATE INDEX feed_items_space_type ON feed_items (space_id, item_type, sequence);

-- A space's tokens, by id (the space page and GET /admin/v1/spaces/{id}).
CREATE INDEX tokens_space ON tokens (space_id, token_id);
