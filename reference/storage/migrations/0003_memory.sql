-- 0003 memory: fixed revisions of collections with their complete entry rows, and the staged
-- inputs of a publish that is prepared but not yet committed.

-- The revision a memory.publish committed (or found unchanged), for its stable result.
ALTER TABLE submissions ADD COLUMN revision INTEGER
    CHECK (revision IS NULL OR revision BETWEEN 0 AND 9007199254740991);

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
