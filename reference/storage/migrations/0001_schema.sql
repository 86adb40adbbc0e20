-- 0001 schema: the whole schema of Waypost/1's reference storage, shared by the SQLite and D1
-- drivers: identities, grants, threads, submissions, messages, feed, receipts, checkpoints;
-- uploads and blobs; memory revisions; the dashboard's sessions. Ids are TEXT, digests 32-byte
-- BLOBs, times UTC ms INTEGERs. Every same-space relation is a composite (space_id, id) foreign
-- key, so no join crosses spaces. Later changes come as migrations 0002 on; this file, like
-- every released migration, is never edited.

CREATE TABLE commit_guards (
    plan_id TEXT PRIMARY KEY,
    verdict TEXT NOT NULL
);

CREATE TABLE spaces (
    space_id TEXT PRIMARY KEY CHECK (length(space_id) BETWEEN 1 AND 96),
    display_name TEXT NOT NULL,
    source_uri TEXT NOT NULL UNIQUE,
    default_actor_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    FOREIGN KEY (space_id, default_actor_id) REFERENCES actors (space_id, actor_id)
        DEFERRABLE INITIALLY DEFERRED
);

CREATE TABLE actors (
    space_id TEXT NOT NULL REFERENCES spaces (space_id) DEFERRABLE INITIALLY DEFERRED,
    actor_id TEXT NOT NULL CHECK (length(actor_id) BETWEEN 1 AND 96),
    kind TEXT NOT NULL CHECK (kind IN ('agent', 'human', 'service')),
    display_name TEXT NOT NULL,
    disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
    authority_version INTEGER NOT NULL DEFAULT 1 CHECK (authority_version >= 1),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (space_id, actor_id)
);

CREATE TABLE consumers (
    space_id TEXT NOT NULL,
    consumer_id TEXT NOT NULL CHECK (length(consumer_id) BETWEEN 1 AND 96),
    actor_id TEXT NOT NULL,
    view TEXT NOT NULL CHECK (view IN ('inbox', 'space_log')),
    view_revision INTEGER NOT NULL DEFAULT 1 CHECK (view_revision >= 1),
    disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1)),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (space_id, consumer_id),
    UNIQUE (space_id, consumer_id, actor_id),
    FOREIGN KEY (space_id, actor_id) REFERENCES actors (space_id, actor_id)
);

CREATE TABLE consumer_filters (
    space_id TEXT NOT NULL,
    consumer_id TEXT NOT NULL,
    dimension TEXT NOT NULL
        CHECK (dimension IN ('producer_ids', 'thread_ids', 'item_types', 'collection_ids')),
    value TEXT NOT NULL,
    PRIMARY KEY (space_id, consumer_id, dimension, value),
    FOREIGN KEY (space_id, consumer_id) REFERENCES consumers (space_id, consumer_id)
);

CREATE TABLE collections (
    space_id TEXT NOT NULL,
    collection_id TEXT NOT NULL CHECK (length(collection_id) BETWEEN 1 AND 96),
    source_actor_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    current_revision INTEGER NOT NULL DEFAULT 0
        CHECK (current_revision BETWEEN 0 AND 9007199254740991),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (space_id, collection_id),
    FOREIGN KEY (space_id, source_actor_id) REFERENCES actors (space_id, actor_id)
);

CREATE TABLE tokens (
    token_id TEXT PRIMARY KEY,
    token_digest BLOB NOT NULL UNIQUE CHECK (length(token_digest) = 32),
    space_id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    consumer_id TEXT NOT NULL,
    recipients_mode TEXT NOT NULL CHECK (recipients_mode IN ('any', 'listed')),
    grant_fingerprint BLOB NOT NULL CHECK (length(grant_fingerprint) = 32),
    expires_at INTEGER,
    revoked_at INTEGER,
    created_at INTEGER NOT NULL,
    FOREIGN KEY (space_id, actor_id) REFERENCES actors (space_id, actor_id),
    FOREIGN KEY (space_id, consumer_id, actor_id)
        REFERENCES consumers (space_id, consumer_id, actor_id)
);

CREATE TABLE token_scopes (
    token_id TEXT NOT NULL REFERENCES tokens (token_id),
    scope TEXT NOT NULL CHECK (scope IN ('message.send', 'message.read', 'space.observe',
        'receipt.write', 'memory.write', 'memory.read', 'blob.write', 'blob.reference',
        'event.subscribe')),
    PRIMARY KEY (token_id, scope)
);

CREATE TABLE token_recipient_grants (
    token_id TEXT NOT NULL REFERENCES tokens (token_id),
    space_id TEXT NOT NULL,
    recipient_actor_id TEXT NOT NULL,
    PRIMARY KEY (token_id, recipient_actor_id),
    FOREIGN KEY (space_id, recipient_actor_id) REFERENCES actors (space_id, actor_id)
);

CREATE TABLE token_collection_grants (
    token_id TEXT NOT NULL REFERENCES tokens (token_id),
    space_id TEXT NOT NULL,
    collection_id TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('read', 'write')),
    PRIMARY KEY (token_id, collection_id, action),
    FOREIGN KEY (space_id, collection_id) REFERENCES collections (space_id, collection_id)
);

-- A granted blob must exist when its token is issued (the guard of the issue plan); there is
-- no foreign key to blobs.
CREATE TABLE token_blob_reference_grants (
    token_id TEXT NOT NULL REFERENCES tokens (token_id),
    space_id TEXT NOT NULL,
    blob_id TEXT NOT NULL,
    PRIMARY KEY (token_id, blob_id)
);

CREATE TABLE threads (
    space_id TEXT NOT NULL REFERENCES spaces (space_id),
    thread_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (space_id, thread_id)
);

CREATE TABLE thread_members (
    space_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    added_at INTEGER NOT NULL,
    PRIMARY KEY (space_id, thread_id, actor_id),
    FOREIGN KEY (space_id, thread_id) REFERENCES threads (space_id, thread_id),
    FOREIGN KEY (space_id, actor_id) REFERENCES actors (space_id, actor_id)
);

CREATE TABLE submissions (
    submission_id TEXT PRIMARY KEY,
    space_id TEXT NOT NULL,
    producer_id TEXT NOT NULL,
    operation TEXT NOT NULL CHECK (operation IN ('message.send', 'receipt.ack',
        'blob.prepare', 'blob.commit', 'memory.publish')),
    request_id TEXT NOT NULL CHECK (length(request_id) BETWEEN 1 AND 128),
    fingerprint BLOB NOT NULL CHECK (length(fingerprint) = 32),
    state TEXT NOT NULL CHECK (state IN ('reserved', 'prepared', 'committed', 'failed')),
    reserved_at INTEGER NOT NULL,
    -- reserved resource ids, fixed at reservation (message/thread/feed item, upload/blob, …)
    resource_id TEXT NOT NULL,
    thread_id TEXT,
    feed_item_id TEXT,
    -- the prepared immutable object (a revision manifest)
    object_ref TEXT UNIQUE,
    object_sha256 BLOB CHECK (object_sha256 IS NULL OR length(object_sha256) = 32),
    object_size INTEGER CHECK (object_size IS NULL OR object_size >= 0),
    prepared_at INTEGER,
    -- the stable result
    result_status INTEGER,
    committed_at INTEGER,
    checkpoint_sequence INTEGER,
    error_code TEXT,
    error_detail TEXT,
    -- the blob an upload reserved (blob.prepare), so that a retry answers with the same ids
    blob_id TEXT,
    -- the revision a memory.publish committed (or found unchanged), for its stable result
    revision INTEGER CHECK (revision IS NULL OR revision BETWEEN 0 AND 9007199254740991),
    UNIQUE (space_id, producer_id, operation, request_id),
    FOREIGN KEY (space_id, producer_id) REFERENCES actors (space_id, actor_id),
    CHECK (state <> 'committed' OR (result_status IS NOT NULL AND committed_at IS NOT NULL)),
    CHECK (state <> 'failed' OR (result_status IS NOT NULL AND error_code IS NOT NULL)),
    CHECK (state <> 'prepared' OR object_ref IS NOT NULL)
);

CREATE TABLE submission_ack_items (
    submission_id TEXT NOT NULL REFERENCES submissions (submission_id),
    position INTEGER NOT NULL CHECK (position BETWEEN 0 AND 99),
    item_id TEXT NOT NULL,
    requested_stage TEXT NOT NULL CHECK (requested_stage IN ('received', 'processed')),
    prior_stage TEXT NOT NULL CHECK (prior_stage IN ('none', 'received', 'processed')),
    prior_version INTEGER NOT NULL CHECK (prior_version >= 0),
    receipt_id TEXT NOT NULL,
    receipt_item_id TEXT NOT NULL,
    PRIMARY KEY (submission_id, position)
);

CREATE TABLE admin_submissions (
    operation TEXT NOT NULL,
    request_id TEXT NOT NULL CHECK (length(request_id) BETWEEN 1 AND 128),
    fingerprint BLOB NOT NULL CHECK (length(fingerprint) = 32),
    result_status INTEGER NOT NULL,
    result_json TEXT NOT NULL,
    committed_at INTEGER NOT NULL,
    PRIMARY KEY (operation, request_id)
);

CREATE TABLE messages (
    space_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    submission_id TEXT NOT NULL UNIQUE REFERENCES submissions (submission_id),
    producer_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    in_reply_to TEXT,
    kind TEXT NOT NULL CHECK (kind IN ('info', 'question', 'result', 'todo_suggestion',
        'memory_notice', 'processing_result')),
    subject TEXT NOT NULL CHECK (length(CAST(subject AS BLOB)) BETWEEN 1 AND 256),
    body_sha256 BLOB NOT NULL CHECK (length(body_sha256) = 32),
    body_size INTEGER NOT NULL CHECK (body_size >= 0),
    metadata_json TEXT,
    committed_at INTEGER NOT NULL,
    -- the body itself: UTF-8 canonical JSON of at most 64 KiB, with its size and digest above
    body TEXT NOT NULL CHECK (length(CAST(body AS BLOB)) = body_size),
    PRIMARY KEY (space_id, message_id),
    FOREIGN KEY (space_id, producer_id) REFERENCES actors (space_id, actor_id),
    FOREIGN KEY (space_id, thread_id) REFERENCES threads (space_id, thread_id),
    FOREIGN KEY (space_id, in_reply_to) REFERENCES messages (space_id, message_id)
);

CREATE TABLE message_recipients (
    space_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    PRIMARY KEY (space_id, message_id, actor_id),
    FOREIGN KEY (space_id, message_id) REFERENCES messages (space_id, message_id),
    FOREIGN KEY (space_id, actor_id) REFERENCES actors (space_id, actor_id)
);

-- An attached blob is checked by the send plan's guard (referenceable at commit); no foreign
-- key to blobs.
CREATE TABLE message_attachments (
    space_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    position INTEGER NOT NULL CHECK (position >= 0),
    blob_id TEXT NOT NULL,
    PRIMARY KEY (space_id, message_id, position),
    FOREIGN KEY (space_id, message_id) REFERENCES messages (space_id, message_id)
);

CREATE TABLE feed_items (
    sequence INTEGER PRIMARY KEY AUTOINCREMENT CHECK (sequence >= 1),
    item_id TEXT NOT NULL UNIQUE,
    space_id TEXT NOT NULL,
    item_type TEXT NOT NULL CHECK (item_type IN ('message', 'memory_revision', 'receipt')),
    producer_id TEXT NOT NULL,
    thread_id TEXT,
    resource_id TEXT NOT NULL,
    collection_id TEXT,
    committed_at INTEGER NOT NULL,
    UNIQUE (space_id, item_id),
    FOREIGN KEY (space_id, producer_id) REFERENCES actors (space_id, actor_id),
    CHECK ((item_type = 'memory_revision') = (collection_id IS NOT NULL))
);

CREATE TABLE feed_recipients (
    space_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    PRIMARY KEY (space_id, item_id, actor_id),
    FOREIGN KEY (space_id, item_id) REFERENCES feed_items (space_id, item_id),
    FOREIGN KEY (space_id, actor_id) REFERENCES actors (space_id, actor_id)
);

CREATE TABLE feed_receipt_updates (
    space_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    receipt_id TEXT NOT NULL,
    receipt_version INTEGER NOT NULL CHECK (receipt_version >= 1),
    subject_item_id TEXT NOT NULL,
    subject_resource_id TEXT NOT NULL,
    consumer_id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    stage TEXT NOT NULL CHECK (stage IN ('received', 'processed')),
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (space_id, item_id),
    UNIQUE (space_id, receipt_id, receipt_version),
    FOREIGN KEY (space_id, item_id) REFERENCES feed_items (space_id, item_id),
    FOREIGN KEY (space_id, subject_item_id) REFERENCES feed_items (space_id, item_id)
);

CREATE TABLE receipts (
    space_id TEXT NOT NULL,
    receipt_id TEXT NOT NULL,
    consumer_id TEXT NOT NULL,
    subject_item_id TEXT NOT NULL,
    stage TEXT NOT NULL CHECK (stage IN ('received', 'processed')),
    version INTEGER NOT NULL CHECK (version >= 1),
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (space_id, receipt_id),
    UNIQUE (space_id, consumer_id, subject_item_id),
    FOREIGN KEY (space_id, consumer_id) REFERENCES consumers (space_id, consumer_id),
    FOREIGN KEY (space_id, subject_item_id) REFERENCES feed_items (space_id, item_id)
);

CREATE TABLE consumer_checkpoints (
    space_id TEXT NOT NULL,
    consumer_id TEXT NOT NULL,
    view_revision INTEGER NOT NULL,
    grant_fingerprint BLOB NOT NULL CHECK (length(grant_fingerprint) = 32),
    sequence INTEGER NOT NULL CHECK (sequence >= 0),
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (space_id, consumer_id, view_revision, grant_fingerprint),
    FOREIGN KEY (space_id, consumer_id) REFERENCES consumers (space_id, consumer_id)
);

-- §5.3 indexes used by public operations.
CREATE INDEX feed_items_space_sequence ON feed_items (space_id, sequence);
CREATE INDEX feed_items_space_resource ON feed_items (space_id, item_type, resource_id, sequence);
CREATE INDEX feed_items_space_thread ON feed_items (space_id, thread_id, sequence);
CREATE INDEX feed_recipients_actor ON feed_recipients (space_id, actor_id, sequence);
CREATE INDEX message_attachments_blob ON message_attachments (space_id, blob_id);
CREATE INDEX messages_thread ON messages (space_id, thread_id);

-- Invariants the database guards itself.
CREATE TRIGGER messages_permanent BEFORE DELETE ON messages
BEGIN SELECT RAISE(ABORT, 'messages are permanent'); END;
CREATE TRIGGER messages_immutable BEFORE UPDATE ON messages
BEGIN SELECT RAISE(ABORT, 'messages are immutable'); END;
CREATE TRIGGER message_recipients_immutable BEFORE UPDATE ON message_recipients
BEGIN SELECT RAISE(ABORT, 'message recipients are immutable'); END;
CREATE TRIGGER message_recipients_permanent BEFORE DELETE ON message_recipients
BEGIN SELECT RAISE(ABORT, 'message recipients are permanent'); END;
CREATE TRIGGER feed_items_permanent BEFORE DELETE ON feed_items
BEGIN SELECT RAISE(ABORT, 'feed items are permanent'); END;
CREATE TRIGGER feed_items_immutable BEFORE UPDATE ON feed_items
BEGIN SELECT RAISE(ABORT, 'feed items are immutable'); END;
CREATE TRIGGER feed_receipt_updates_immutable BEFORE UPDATE ON feed_receipt_updates
BEGIN SELECT RAISE(ABORT, 'receipt history is immutable'); END;
CREATE TRIGGER feed_receipt_updates_permanent BEFORE DELETE ON feed_receipt_updates
BEGIN SELECT RAISE(ABORT, 'receipt history is permanent'); END;
CREATE TRIGGER receipts_forward_only BEFORE UPDATE ON receipts
WHEN NEW.version <> OLD.version + 1
  OR OLD.stage = 'processed'
  OR NEW.stage <> 'processed'
  OR NEW.receipt_id IS NOT OLD.receipt_id
  OR NEW.consumer_id IS NOT OLD.consumer_id
  OR NEW.subject_item_id IS NOT OLD.subject_item_id
BEGIN SELECT RAISE(ABORT, 'receipts only advance: received -> processed, version + 1'); END;
CREATE TRIGGER receipts_permanent BEFORE DELETE ON receipts
BEGIN SELECT RAISE(ABORT, 'receipts are permanent'); END;
CREATE TRIGGER consumer_checkpoints_forward_only BEFORE UPDATE ON consumer_checkpoints
WHEN NEW.sequence < OLD.sequence
BEGIN SELECT RAISE(ABORT, 'checkpoints only move forward'); END;
CREATE TRIGGER consumers_view_revision_forward_only BEFORE UPDATE ON consumers
WHEN NEW.view_revision < OLD.view_revision OR NEW.actor_id IS NOT OLD.actor_id
BEGIN SELECT RAISE(ABORT, 'a consumer keeps its actor and its view revision only grows'); END;
CREATE TRIGGER submissions_final BEFORE UPDATE ON submissions
WHEN OLD.state IN ('committed', 'failed')
  OR NEW.fingerprint IS NOT OLD.fingerprint
  OR NEW.resource_id IS NOT OLD.resource_id
BEGIN SELECT RAISE(ABORT, 'a submission keeps its key facts and its final result'); END;
CREATE TRIGGER tokens_unrevoke BEFORE UPDATE ON tokens
WHEN OLD.revoked_at IS NOT NULL OR NEW.token_digest IS NOT OLD.token_digest
  OR NEW.grant_fingerprint IS NOT OLD.grant_fingerprint
BEGIN SELECT RAISE(ABORT, 'a token changes only by being revoked, once'); END;

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
