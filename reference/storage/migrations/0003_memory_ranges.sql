-- 0003 memory ranges: a collection's entries as rows valid over a range of revisions, instead
-- of a complete copy of every entry for every revision (0002's memory_revision_items). A publish
-- writes only what it changes: it closes the rows it replaces (until_revision = the new
-- revision) and inserts their successors (from_revision = the new revision). Revision r holds
-- exactly the rows with from_revision <= r < until_revision (NULL: still open).
--
-- Why the invariants of 0002 still hold, enforced here:
-- * a row is written only into the revision being published (from = head + 1, open);
-- * a row is closed once, only by the revision being published, and nothing else of it changes;
-- * one open row per item: so an item's ranges never overlap, and revision r's state is read
--   as one row per item;
-- * active paths are unique among open rows. Every revision's rows were the open rows right
--   after it was published (closing is the only change, and happens later), so active paths are
--   unique within every revision.
-- entry_bytes is the entry's canonical JSON as manifests and item pages show it (tombstones with
-- deleted_in_revision = from_revision); the database computes and checks it, so a revision's
-- manifest size is a sum (published as revision_manifest_bytes, protocol.md §11). The JSON is
-- composed without json_quote(), whose escapes differ between SQLite builds (D1's among them):
-- ids are [A-Za-z0-9_-] and a path holds no control character and no backslash (protocol.md
-- §3), so RFC 8785 escapes only its quotes.

CREATE TABLE memory_entries (
    space_id TEXT NOT NULL,
    collection_id TEXT NOT NULL,
    item_id TEXT NOT NULL CHECK (length(item_id) BETWEEN 1 AND 96
        AND item_id NOT GLOB '*[^A-Za-z0-9_-]*'),
    from_revision INTEGER NOT NULL CHECK (from_revision BETWEEN 1 AND 9007199254740991),
    until_revision INTEGER CHECK (until_revision IS NULL OR until_revision > from_revision),
    entry_kind TEXT NOT NULL CHECK (entry_kind IN ('active', 'tombstone')),
    entry_bytes INTEGER NOT NULL,
    blob_id TEXT,
    path TEXT CHECK (path IS NULL OR length(CAST(path AS BLOB)) BETWEEN 1 AND 1024),
    metadata_json TEXT CHECK (metadata_json IS NULL OR json_valid(metadata_json)),
    PRIMARY KEY (space_id, collection_id, item_id, from_revision),
    CHECK (
        (entry_kind = 'active' AND blob_id IS NOT NULL AND path IS NOT NULL
         AND metadata_json IS NOT NULL)
        OR
        (entry_kind = 'tombstone' AND blob_id IS NULL AND path IS NULL AND metadata_json IS NULL)
    ),
    CHECK (entry_bytes = length(CAST(CASE entry_kind
        WHEN 'active' THEN '{"blob_id":"' || blob_id || '","item_id":"'
            || item_id || '","metadata":' || metadata_json || ',"path":"'
            || replace(path, '"', '\"') || '","state":"active"}'
        ELSE '{"deleted_in_revision":' || from_revision || ',"item_id":"' || item_id
            || '","state":"tombstone"}' END AS BLOB))),
    FOREIGN KEY (space_id, collection_id, from_revision)
        REFERENCES memory_revisions (space_id, collection_id, revision),
    FOREIGN KEY (space_id, collection_id, until_revision)
        REFERENCES memory_revisions (space_id, collection_id, revision),
    FOREIGN KEY (space_id, blob_id) REFERENCES blobs (space_id, blob_id)
);

-- One open row per item; the open rows are the head's state.
CREATE UNIQUE INDEX memory_entries_open
ON memory_entries (space_id, collection_id, item_id) WHERE until_revision IS NULL;
-- Active paths are unique among the open rows (so within every revision, see above).
CREATE UNIQUE INDEX memory_entries_active_path
ON memory_entries (space_id, collection_id, path)
WHERE entry_kind = 'active' AND until_revision IS NULL;
-- The rows a publish has just closed (the commit turns deleted or unlisted ones into tombstones),
-- and the rows that changed between two revisions (the dashboard's difference).
CREATE INDEX memory_entries_closed ON memory_entries (space_id, collection_id, until_revision)
WHERE until_revision IS NOT NULL;
-- Which revisions reference a blob (P16 read access).
CREATE INDEX memory_entries_blob ON memory_entries (space_id, blob_id);

-- Every entry of 0002, one row per run of revisions where it stayed the same.
INSERT INTO memory_entries (space_id, collection_id, item_id, from_revision, until_revision,
    entry_kind, entry_bytes, blob_id, path, metadata_json)
SELECT space_id, collection_id, item_id, revision,
    LEAD(revision) OVER (PARTITION BY space_id, collection_id, item_id ORDER BY revision),
    entry_kind,
    length(CAST(CASE entry_kind
        WHEN 'active' THEN '{"blob_id":"' || blob_id || '","item_id":"'
            || item_id || '","metadata":' || metadata_json || ',"path":"'
            || replace(path, '"', '\"') || '","state":"active"}'
        ELSE '{"deleted_in_revision":' || revision || ',"item_id":"' || item_id
            || '","state":"tombstone"}' END AS BLOB)),
    blob_id, path, metadata_json
FROM (SELECT cur.* FROM memory_revision_items cur
      LEFT JOIN memory_revision_items prev ON prev.space_id = cur.space_id
          AND prev.collection_id = cur.collection_id AND prev.item_id = cur.item_id
          AND prev.revision = cur.revision - 1
      WHERE prev.item_id IS NULL OR prev.entry_kind IS NOT cur.entry_kind
          OR prev.path IS NOT cur.path OR prev.blob_id IS NOT cur.blob_id
          OR prev.metadata_json IS NOT cur.metadata_json);

DROP TABLE memory_revision_items;

-- Rows are inserted only into the revision being published, open.
CREATE TRIGGER memory_entries_unpublished BEFORE INSERT ON memory_entries
WHEN NEW.until_revision IS NOT NULL
  OR NOT EXISTS (SELECT 1 FROM collections c WHERE c.space_id = NEW.space_id
      AND c.collection_id = NEW.collection_id AND c.current_revision + 1 = NEW.from_revision)
BEGIN SELECT RAISE(ABORT, 'entries are written only into the revision being published'); END;
-- An open row is closed once, by the revision being published; nothing else of it changes.
CREATE TRIGGER memory_entries_close_only BEFORE UPDATE ON memory_entries
WHEN OLD.until_revision IS NOT NULL
  OR NEW.space_id IS NOT OLD.space_id OR NEW.collection_id IS NOT OLD.collection_id
  OR NEW.item_id IS NOT OLD.item_id OR NEW.from_revision IS NOT OLD.from_revision
  OR NEW.entry_kind IS NOT OLD.entry_kind OR NEW.entry_bytes IS NOT OLD.entry_bytes
  OR NEW.blob_id IS NOT OLD.blob_id OR NEW.path IS NOT OLD.path
  OR NEW.metadata_json IS NOT OLD.metadata_json
  OR NOT EXISTS (SELECT 1 FROM collections c WHERE c.space_id = NEW.space_id
      AND c.collection_id = NEW.collection_id AND c.current_revision + 1 = NEW.until_revision)
BEGIN SELECT RAISE(ABORT, 'a revision entry is only closed, once, by the revision being published'); END;
CREATE TRIGGER memory_entries_permanent BEFORE DELETE ON memory_entries
BEGIN SELECT RAISE(ABORT, 'revision entries are permanent'); END;
