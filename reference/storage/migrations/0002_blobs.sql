-- 0002 blobs: expiring upload slots and sealed, immutable, verified blobs.

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

-- The blob an upload reserved is fixed in its submission (blob.prepare), so a retry answers
-- with the same ids.
ALTER TABLE submissions ADD COLUMN blob_id TEXT;

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
