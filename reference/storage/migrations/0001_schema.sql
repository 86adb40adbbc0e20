-- 0001 schema: the schema of Waypost/1's reference storage, shared by the SQLite and D1 drivers,
-- in two files (0001 and 0002) only because a D1 batch holds at most 50 statements and each
-- migration is applied as one atomic batch. This one: identities, grants, threads, submissions,
-- messages, feed, receipts, checkpoints. Ids are TEXT, digests 32-byte BLOBs, times UTC ms
-- INTEGERs. Every same-space relation is a composite (space_id, id) foreign key, so no join
-- crosses spaces. Later changes come as migrations 0003 on. Until the first release this file
-- and 0002 may still change (a database made from an earlier form is made anew, none is
-- deployed); once released, like every migration, they are never edited.

CREATE TABLE commit_guards (
    plan_id TEXT PRIMARY KEY,
    verdict TEXT NOT NULL
) WITHOUT ROWID;

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
) WITHOUT ROWID;

CREATE TABLE thread_members (
    space_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    added_at INTEGER NOT NULL,
    PRIMARY KEY (space_id, thread_id, actor_id),
    FOREIGN KEY (space_id, thread_id) REFERENCES threads (space_id, thread_id),
    FOREIGN KEY (space_id, actor_id) REFERENCES actors (space_id, actor_id)
) WITHOUT ROWID;

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
    object_ref TEXT,
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
) WITHOUT ROWID;

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
) WITHOUT ROWID;

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
-- only prepared objects have a reference: a send's NULL takes no index page
CREATE UNIQUE INDEX submissions_object_ref ON submissions (object_ref)
WHERE object_ref IS NOT NULL;

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
