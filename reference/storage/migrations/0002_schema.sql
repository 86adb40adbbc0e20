-- 0002 schema: the rest of the release schema (see 0001): uploads and blobs, memory revisions,
-- the dashboard's sessions and indexes.

-- Blobs: expiring upload slots and sealed, immutable, verified blobs.

CREATE TABLE uploads (
    space_id TEXT NOT NULL,
    upload_id TEXT NOT NULL,
    blob_id TEXT NOT NULL UNIQUE,
    owner_id TEXT NOT NULL,
    submission_id TEXT NOT NULL UNIQUE REFERENCES submissions (submission_id),
    expected_size INTEGER NOT NULL CHECK (expected_size >= 0),
    expected_sha256 BLOB NOT NULL CHECK (length(expected_sha256) = 32),
    content_type TEXT NOT NULL CHECK (length(content_type) BETWEEN 1 AND 255),
    filename TEXT CHECK (filename IS NULL OR length(CAST(filename AS BLOB)) BETWEEN 1 AND 255),
    object_ref TEXT NOT NULL UNIQUE,
    expires_at INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'awaiting'
        CHECK (state IN ('awaiting', 'stored', 'sealed', 'cleaning', 'cleaned')),
    created_at INTEGER NOT NULL,
    stored_at INTEGER,
    PRIMARY KEY (space_id, upload_id),
    FOREIGN KEY (space_id, owner_id) REFERENCES actors (space_id, actor_id),
    CHECK ((state IN ('stored', 'sealed')) <= (stored_at IS NOT NULL))
);

CREATE INDEX uploads_expiry ON uploads (state, expires_at);

CREATE TABLE blobs (
    space_id TEXT NOT NULL,
    blob_id TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    object_ref TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL CHECK (size >= 0),
    sha256 BLOB NOT NULL CHECK (length(sha256) = 32),
    content_type TEXT NOT NULL,
    filename TEXT,
    sealed_at INTEGER NOT NULL,
    PRIMARY KEY (space_id, blob_id),
    FOREIGN KEY (space_id, owner_id) REFERENCES actors (space_id, actor_id),
    FOREIGN KEY (blob_id) REFERENCES uploads (blob_id)
);

-- An upload only moves forward: awaiting → stored → sealed, or awaiting/stored → cleaning →
-- cleaned. A sealed upload never changes again.
CREATE TRIGGER uploads_forward_only BEFORE UPDATE ON uploads
WHEN NOT (
       (OLD.state = 'awaiting' AND NEW.state IN ('stored', 'cleaning'))
    OR (OLD.state = 'stored' AND NEW.state IN ('sealed', 'cleaning'))
    OR (OLD.state = 'cleaning' AND NEW.state = 'cleaned'))
  OR NEW.blob_id IS NOT OLD.blob_id OR NEW.object_ref IS NOT OLD.object_ref
  OR NEW.expected_sha256 IS NOT OLD.expected_sha256
  OR NEW.expected_size IS NOT OLD.expected_size
BEGIN SELECT RAISE(ABORT, 'uploads only move forward and keep their expected facts'); END;
CREATE TRIGGER uploads_permanent BEFORE DELETE ON uploads
BEGIN SELECT RAISE(ABORT, 'upload rows are kept'); END;
CREATE TRIGGER blobs_immutable BEFORE UPDATE ON blobs
BEGIN SELECT RAISE(ABORT, 'sealed blobs are immutable'); END;
CREATE TRIGGER blobs_permanent BEFORE DELETE ON blobs
BEGIN SELECT RAISE(ABORT, 'sealed blobs are permanent'); END;
-- A blob row exists only for a sealed upload with the same facts.
CREATE TRIGGER blobs_only_when_sealed BEFORE INSERT ON blobs
WHEN NOT EXISTS (SELECT 1 FROM uploads u WHERE u.blob_id = NEW.blob_id
    AND u.space_id = NEW.space_id AND u.state = 'stored' AND u.object_ref = NEW.object_ref
    AND u.expected_size = NEW.size AND u.expected_sha256 = NEW.sha256)
BEGIN SELECT RAISE(ABORT, 'a blob is sealed from its stored upload, with the same facts'); END;

-- Memory: fixed revisions of collections with their complete entry rows, and the staged
-- inputs of a publish that is prepared but not yet committed.

CREATE TABLE memory_revisions (
    space_id TEXT NOT NULL,
    collection_id TEXT NOT NULL,
    revision INTEGER NOT NULL CHECK (revision BETWEEN 1 AND 9007199254740991),
    parent_revision INTEGER NOT NULL CHECK (parent_revision >= 0),
    submission_id TEXT NOT NULL UNIQUE REFERENCES submissions (submission_id),
    manifest_blob_id TEXT NOT NULL UNIQUE,
    state_fingerprint BLOB NOT NULL CHECK (length(state_fingerprint) = 32),
    feed_item_id TEXT NOT NULL UNIQUE,
    committed_at INTEGER NOT NULL,
    PRIMARY KEY (space_id, collection_id, revision),
    CHECK (revision = parent_revision + 1),
    FOREIGN KEY (space_id, collection_id) REFERENCES collections (space_id, collection_id),
    FOREIGN KEY (space_id, manifest_blob_id) REFERENCES blobs (space_id, blob_id),
    FOREIGN KEY (space_id, feed_item_id) REFERENCES feed_items (space_id, item_id)
);

CREATE TABLE memory_revision_items (
    space_id TEXT NOT NULL,
    collection_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    item_id TEXT NOT NULL CHECK (length(item_id) BETWEEN 1 AND 96),
    entry_kind TEXT NOT NULL CHECK (entry_kind IN ('active', 'tombstone')),
    blob_id TEXT,
    path TEXT CHECK (path IS NULL OR length(CAST(path AS BLOB)) BETWEEN 1 AND 1024),
    metadata_json TEXT,
    deleted_in_revision INTEGER,
    PRIMARY KEY (space_id, collection_id, revision, item_id),
    CHECK (
        (entry_kind = 'active' AND blob_id IS NOT NULL AND path IS NOT NULL
         AND metadata_json IS NOT NULL AND deleted_in_revision IS NULL)
        OR
        (entry_kind = 'tombstone' AND blob_id IS NULL AND path IS NULL
         AND metadata_json IS NULL AND deleted_in_revision IS NOT NULL
         AND deleted_in_revision > 0 AND deleted_in_revision <= revision)
    ),
    FOREIGN KEY (space_id, collection_id, revision)
        REFERENCES memory_revisions (space_id, collection_id, revision),
    FOREIGN KEY (space_id, blob_id) REFERENCES blobs (space_id, blob_id)
);

-- Active paths are unique within one revision.
CREATE UNIQUE INDEX memory_active_path
ON memory_revision_items (space_id, collection_id, revision, path)
WHERE entry_kind = 'active';
-- Which revisions reference a blob (P16 read access).
CREATE INDEX memory_revision_items_blob ON memory_revision_items (space_id, blob_id);

-- The inputs of one publish (upserts and deletes), staged while it is prepared so the commit
-- stays one small plan that derives the new rows from the parent's rows in SQL.
CREATE TABLE memory_publish_inputs (
    submission_id TEXT NOT NULL REFERENCES submissions (submission_id),
    item_id TEXT NOT NULL CHECK (length(item_id) BETWEEN 1 AND 96),
    action TEXT NOT NULL CHECK (action IN ('upsert', 'delete')),
    path TEXT,
    blob_id TEXT,
    metadata_json TEXT,
    PRIMARY KEY (submission_id, item_id),
    CHECK ((action = 'upsert' AND path IS NOT NULL AND blob_id IS NOT NULL
            AND metadata_json IS NOT NULL)
        OR (action = 'delete' AND path IS NULL AND blob_id IS NULL AND metadata_json IS NULL))
);

-- Inputs are staged only for a submission still being prepared.
CREATE TRIGGER memory_publish_inputs_while_reserved BEFORE INSERT ON memory_publish_inputs
WHEN NOT EXISTS (SELECT 1 FROM submissions WHERE submission_id = NEW.submission_id
    AND operation = 'memory.publish' AND state = 'reserved')
BEGIN SELECT RAISE(ABORT, 'publish inputs are staged only while the submission is reserved'); END;

-- A revision is always the head's successor: parent = head at the moment it is written.
CREATE TRIGGER memory_revisions_follow_head BEFORE INSERT ON memory_revisions
WHEN NOT EXISTS (SELECT 1 FROM collections c WHERE c.space_id = NEW.space_id
    AND c.collection_id = NEW.collection_id AND c.current_revision = NEW.parent_revision)
BEGIN SELECT RAISE(ABORT, 'a revision must follow the collection head'); END;
CREATE TRIGGER memory_revisions_immutable BEFORE UPDATE ON memory_revisions
BEGIN SELECT RAISE(ABORT, 'revisions are immutable'); END;
CREATE TRIGGER memory_revisions_permanent BEFORE DELETE ON memory_revisions
BEGIN SELECT RAISE(ABORT, 'revisions are permanent'); END;

-- Entry rows are written only into the revision being published (above the head); once the head
-- reaches a revision its entry set is closed.
CREATE TRIGGER memory_revision_items_unpublished BEFORE INSERT ON memory_revision_items
WHEN NOT EXISTS (SELECT 1 FROM collections c WHERE c.space_id = NEW.space_id
    AND c.collection_id = NEW.collection_id AND c.current_revision + 1 = NEW.revision)
BEGIN SELECT RAISE(ABORT, 'entries are written only into the revision being published'); END;
CREATE TRIGGER memory_revision_items_immutable BEFORE UPDATE ON memory_revision_items
BEGIN SELECT RAISE(ABORT, 'revision entries are immutable'); END;
CREATE TRIGGER memory_revision_items_permanent BEFORE DELETE ON memory_revision_items
BEGIN SELECT RAISE(ABORT, 'revision entries are permanent'); END;

-- The head moves forward one revision at a time, only onto a written revision; a collection's
-- source and scope never change.
CREATE TRIGGER collections_head_forward_only BEFORE UPDATE ON collections
WHEN NEW.current_revision <> OLD.current_revision + 1
  OR NOT EXISTS (SELECT 1 FROM memory_revisions r WHERE r.space_id = NEW.space_id
      AND r.collection_id = NEW.collection_id AND r.revision = NEW.current_revision)
  OR NEW.source_actor_id IS NOT OLD.source_actor_id OR NEW.scope IS NOT OLD.scope
  OR NEW.space_id IS NOT OLD.space_id OR NEW.collection_id IS NOT OLD.collection_id
BEGIN SELECT RAISE(ABORT, 'a collection head only moves forward onto a written revision'); END;
CREATE TRIGGER collections_permanent BEFORE DELETE ON collections
BEGIN SELECT RAISE(ABORT, 'collections are permanent'); END;

-- Admin sessions: the operator dashboard's signed-in browsers. Only a SHA-256 digest of the
-- random session id is stored; the id itself lives in the browser's cookie only. A session is
-- live while not revoked, before its absolute expiry and within idle_ms of its last use.

CREATE TABLE admin_sessions (
    session_digest BLOB PRIMARY KEY CHECK (length(session_digest) = 32),
    created_at INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL CHECK (last_seen_at >= created_at),
    idle_ms INTEGER NOT NULL CHECK (idle_ms > 0),
    expires_at INTEGER NOT NULL CHECK (expires_at > created_at),
    revoked_at INTEGER
);

CREATE TRIGGER admin_sessions_stay_revoked BEFORE UPDATE ON admin_sessions
WHEN OLD.revoked_at IS NOT NULL OR NEW.session_digest IS NOT OLD.session_digest
  OR NEW.created_at IS NOT OLD.created_at OR NEW.expires_at IS NOT OLD.expires_at
  OR NEW.idle_ms IS NOT OLD.idle_ms OR NEW.last_seen_at < OLD.last_seen_at
BEGIN SELECT RAISE(ABORT, 'a session only moves its last use forward, until revoked once'); END;

-- The dashboard's message page reads the history of every receipt about one message.
CREATE INDEX feed_receipt_updates_subject ON feed_receipt_updates (space_id, subject_item_id);

-- Dashboard indexes: the operator dashboard's feed filters and listings read through indexes
-- instead of walking a space's whole feed or every token.

-- The feed filtered by producer or by item type, newest first.
CREATE INDEX feed_items_space_producer ON feed_items (space_id, producer_id, sequence);
CREATE INDEX feed_items_space_type ON feed_items (space_id, item_type, sequence);

-- A space's tokens, by id (the space page and GET /admin/v1/spaces/{id}).
CREATE INDEX tokens_space ON tokens (space_id, token_id);
