-- 0001 local: the reference consumer's own SQLite file (never a server database).
-- What it has received (items, message bodies, receipt advances, fixed memory revisions), the
-- local work on each item, its place in the feed, and every write it owes the server.
-- Sequences are INTEGERs (the server sends decimal strings up to 2^63-1); times UTC ms.

CREATE TABLE local_profile (
    profile_id INTEGER PRIMARY KEY CHECK (profile_id = 1),
    server_url TEXT NOT NULL CHECK (server_url LIKE 'http://%' OR server_url LIKE 'https://%'),
    label TEXT NOT NULL CHECK (length(label) BETWEEN 1 AND 96),
    view_epoch INTEGER NOT NULL DEFAULT 1 CHECK (view_epoch >= 1),
    created_at INTEGER NOT NULL
);

CREATE TABLE local_checkpoints (
    consumer_key TEXT NOT NULL,
    view_epoch INTEGER NOT NULL CHECK (view_epoch >= 1),
    cursor TEXT NOT NULL,
    last_sequence INTEGER NOT NULL CHECK (last_sequence >= 1),
    pages INTEGER NOT NULL CHECK (pages >= 1),
    saved_at INTEGER NOT NULL,
    PRIMARY KEY (consumer_key, view_epoch)
);

CREATE TABLE local_feed_items (
    item_id TEXT PRIMARY KEY CHECK (length(item_id) BETWEEN 1 AND 96),
    sequence INTEGER NOT NULL CHECK (sequence BETWEEN 1 AND 9223372036854775807),
    item_type TEXT NOT NULL CHECK (item_type IN ('message', 'memory_revision', 'receipt')),
    producer_id TEXT NOT NULL,
    thread_id TEXT,
    resource_id TEXT NOT NULL,
    resource_version INTEGER CHECK (resource_version IS NULL OR resource_version >= 0),
    committed_at TEXT NOT NULL,
    view_epoch INTEGER NOT NULL CHECK (view_epoch >= 1),
    stored_at INTEGER NOT NULL
);

CREATE INDEX local_feed_items_by_sequence ON local_feed_items (sequence);

CREATE TABLE local_messages (
    message_id TEXT PRIMARY KEY,
    item_id TEXT NOT NULL UNIQUE REFERENCES local_feed_items (item_id),
    thread_id TEXT NOT NULL,
    in_reply_to TEXT,
    producer_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    body_text TEXT NOT NULL,
    body_source_uri TEXT,
    metadata_json TEXT,
    committed_at TEXT NOT NULL
);

CREATE TABLE local_message_recipients (
    message_id TEXT NOT NULL REFERENCES local_messages (message_id),
    actor_id TEXT NOT NULL,
    PRIMARY KEY (message_id, actor_id)
);

CREATE TABLE local_message_options (
    message_id TEXT NOT NULL REFERENCES local_messages (message_id),
    position INTEGER NOT NULL CHECK (position >= 0),
    option_text TEXT NOT NULL,
    PRIMARY KEY (message_id, position)
);

CREATE TABLE local_message_attachments (
    message_id TEXT NOT NULL REFERENCES local_messages (message_id),
    position INTEGER NOT NULL CHECK (position >= 0),
    blob_id TEXT NOT NULL,
    PRIMARY KEY (message_id, position)
);

CREATE TABLE local_receipt_updates (
    item_id TEXT PRIMARY KEY REFERENCES local_feed_items (item_id),
    receipt_id TEXT NOT NULL,
    receipt_version INTEGER NOT NULL CHECK (receipt_version >= 1),
    subject_item_id TEXT NOT NULL,
    subject_resource_id TEXT NOT NULL,
    consumer_id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    stage TEXT NOT NULL CHECK (stage IN ('received', 'processed')),
    updated_at TEXT NOT NULL,
    UNIQUE (receipt_id, receipt_version)
);

CREATE TABLE local_memory_versions (
    collection_id TEXT NOT NULL,
    revision INTEGER NOT NULL CHECK (revision BETWEEN 1 AND 9007199254740991),
    item_id TEXT NOT NULL UNIQUE REFERENCES local_feed_items (item_id),
    parent_revision INTEGER NOT NULL CHECK (parent_revision = revision - 1),
    manifest_blob_id TEXT,
    entries INTEGER NOT NULL CHECK (entries >= 0),
    PRIMARY KEY (collection_id, revision)
);

CREATE TABLE local_memory_entries (
    collection_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    entry_id TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('active', 'tombstone')),
    path TEXT,
    blob_id TEXT,
    metadata_json TEXT,
    deleted_in_revision INTEGER,
    PRIMARY KEY (collection_id, revision, entry_id),
    FOREIGN KEY (collection_id, revision) REFERENCES local_memory_versions (collection_id, revision),
    CHECK ((state = 'active') = (path IS NOT NULL AND blob_id IS NOT NULL)),
    CHECK ((state = 'tombstone') = (deleted_in_revision IS NOT NULL))
);

CREATE TABLE local_work (
    item_id TEXT PRIMARY KEY REFERENCES local_feed_items (item_id),
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'in_progress', 'done', 'error')),
    error TEXT CHECK ((state = 'error') = (error IS NOT NULL)),
    updated_at INTEGER NOT NULL
);

CREATE TABLE local_outbound (
    outbound_id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL UNIQUE CHECK (length(request_id) BETWEEN 1 AND 128),
    operation TEXT NOT NULL CHECK (operation IN ('message.send', 'receipt.ack', 'memory.publish')),
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'committed', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- message.send
    new_thread INTEGER CHECK (new_thread IN (0, 1)),
    thread_id TEXT,
    in_reply_to TEXT,
    kind TEXT,
    subject TEXT,
    body_text TEXT,
    reply_to_item_id TEXT REFERENCES local_feed_items (item_id),
    -- receipt.ack
    checkpoint_cursor TEXT,
    -- memory.publish
    collection_id TEXT,
    expected_revision INTEGER CHECK (expected_revision BETWEEN 0 AND 9007199254740991),
    publish_mode TEXT CHECK (publish_mode IN ('snapshot', 'delta')),
    -- the current submission result
    result_status INTEGER,
    result_json TEXT,
    error_code TEXT,
    error_message TEXT,
    created_at INTEGER NOT NULL,
    submitted_at INTEGER,
    CHECK (operation <> 'message.send'
           OR (new_thread IS NOT NULL AND kind IS NOT NULL AND subject IS NOT NULL
               AND body_text IS NOT NULL AND ((new_thread = 1) = (thread_id IS NULL)))),
    CHECK (operation <> 'memory.publish'
           OR (collection_id IS NOT NULL AND expected_revision IS NOT NULL
               AND publish_mode IS NOT NULL)),
    CHECK ((state = 'pending') = (result_status IS NULL))
);

CREATE INDEX local_outbound_pending ON local_outbound (state, outbound_id);

CREATE TABLE local_outbound_recipients (
    outbound_id INTEGER NOT NULL REFERENCES local_outbound (outbound_id),
    position INTEGER NOT NULL CHECK (position >= 0),
    actor_id TEXT NOT NULL,
    PRIMARY KEY (outbound_id, position),
    UNIQUE (outbound_id, actor_id)
);

CREATE TABLE local_outbound_ack_items (
    outbound_id INTEGER NOT NULL REFERENCES local_outbound (outbound_id),
    position INTEGER NOT NULL CHECK (position BETWEEN 0 AND 19),
    item_id TEXT NOT NULL REFERENCES local_feed_items (item_id),
    stage TEXT NOT NULL CHECK (stage IN ('received', 'processed')),
    PRIMARY KEY (outbound_id, position),
    UNIQUE (outbound_id, item_id)
);

CREATE INDEX local_outbound_ack_items_by_item ON local_outbound_ack_items (item_id, stage);

CREATE TABLE local_outbound_entries (
    outbound_id INTEGER NOT NULL REFERENCES local_outbound (outbound_id),
    entry_id TEXT NOT NULL,
    path TEXT NOT NULL,
    blob_id TEXT NOT NULL,
    PRIMARY KEY (outbound_id, entry_id)
);

CREATE TABLE local_outbound_deletes (
    outbound_id INTEGER NOT NULL REFERENCES local_outbound (outbound_id),
    entry_id TEXT NOT NULL,
    PRIMARY KEY (outbound_id, entry_id)
);

CREATE TRIGGER local_profile_fixed BEFORE UPDATE ON local_profile
WHEN NEW.server_url IS NOT OLD.server_url OR NEW.label IS NOT OLD.label
  OR NEW.view_epoch < OLD.view_epoch
BEGIN SELECT RAISE(ABORT, 'a local database keeps its server and label; view epochs only grow'); END;

-- What was received never changes and never vanishes.
CREATE TRIGGER local_feed_items_immutable BEFORE UPDATE ON local_feed_items
BEGIN SELECT RAISE(ABORT, 'received feed items are immutable'); END;
CREATE TRIGGER local_feed_items_permanent BEFORE DELETE ON local_feed_items
BEGIN SELECT RAISE(ABORT, 'received feed items are permanent'); END;
CREATE TRIGGER local_messages_immutable BEFORE UPDATE ON local_messages
BEGIN SELECT RAISE(ABORT, 'received messages are immutable'); END;
CREATE TRIGGER local_messages_permanent BEFORE DELETE ON local_messages
BEGIN SELECT RAISE(ABORT, 'received messages are permanent'); END;
CREATE TRIGGER local_receipt_updates_immutable BEFORE UPDATE ON local_receipt_updates
BEGIN SELECT RAISE(ABORT, 'received receipt advances are immutable'); END;
CREATE TRIGGER local_memory_versions_immutable BEFORE UPDATE ON local_memory_versions
BEGIN SELECT RAISE(ABORT, 'a pinned memory revision is immutable'); END;
CREATE TRIGGER local_memory_entries_immutable BEFORE UPDATE ON local_memory_entries
BEGIN SELECT RAISE(ABORT, 'a pinned memory revision is immutable'); END;

-- The checkpoint never runs ahead of what is stored: its last sequence is an item stored
-- locally (in the same transaction as its page, or before), and it only moves forward.
CREATE TRIGGER local_checkpoints_never_ahead_insert BEFORE INSERT ON local_checkpoints
WHEN NOT EXISTS (SELECT 1 FROM local_feed_items WHERE sequence = NEW.last_sequence)
BEGIN SELECT RAISE(ABORT, 'a checkpoint is saved only with its page''s items'); END;
CREATE TRIGGER local_checkpoints_never_ahead BEFORE UPDATE ON local_checkpoints
WHEN NOT EXISTS (SELECT 1 FROM local_feed_items WHERE sequence = NEW.last_sequence)
BEGIN SELECT RAISE(ABORT, 'a checkpoint is saved only with its page''s items'); END;
CREATE TRIGGER local_checkpoints_forward_only BEFORE UPDATE ON local_checkpoints
WHEN NEW.last_sequence < OLD.last_sequence OR NEW.pages < OLD.pages
BEGIN SELECT RAISE(ABORT, 'local checkpoints only move forward'); END;

-- Work moves pending -> in_progress -> done, or to an explicit error; done stays done.
CREATE TRIGGER local_work_forward_only BEFORE UPDATE ON local_work
WHEN OLD.state IN ('done', 'error') AND NEW.state <> OLD.state
  OR (OLD.state = 'in_progress' AND NEW.state = 'pending')
  OR NEW.item_id IS NOT OLD.item_id
BEGIN SELECT RAISE(ABORT, 'local work only moves forward: pending, in_progress, done or error'); END;
CREATE TRIGGER local_work_permanent BEFORE DELETE ON local_work
BEGIN SELECT RAISE(ABORT, 'local work records are permanent'); END;

-- An outbound write keeps its request_id and arguments from the moment it was written; a final
-- result never changes.
CREATE TRIGGER local_outbound_request_fixed BEFORE UPDATE ON local_outbound
WHEN NEW.request_id IS NOT OLD.request_id OR NEW.operation IS NOT OLD.operation
  OR NEW.new_thread IS NOT OLD.new_thread OR NEW.thread_id IS NOT OLD.thread_id
  OR NEW.in_reply_to IS NOT OLD.in_reply_to OR NEW.kind IS NOT OLD.kind
  OR NEW.subject IS NOT OLD.subject OR NEW.body_text IS NOT OLD.body_text
  OR NEW.checkpoint_cursor IS NOT OLD.checkpoint_cursor
  OR NEW.collection_id IS NOT OLD.collection_id
  OR NEW.expected_revision IS NOT OLD.expected_revision
  OR NEW.publish_mode IS NOT OLD.publish_mode OR NEW.created_at IS NOT OLD.created_at
BEGIN SELECT RAISE(ABORT, 'an outbound write keeps its request_id and arguments'); END;
CREATE TRIGGER local_outbound_final BEFORE UPDATE ON local_outbound
WHEN OLD.state <> 'pending'
BEGIN SELECT RAISE(ABORT, 'an outbound write keeps its final result'); END;
CREATE TRIGGER local_outbound_permanent BEFORE DELETE ON local_outbound
BEGIN SELECT RAISE(ABORT, 'outbound writes are permanent'); END;
CREATE TRIGGER local_outbound_recipients_fixed BEFORE INSERT ON local_outbound_recipients
WHEN (SELECT attempts FROM local_outbound WHERE outbound_id = NEW.outbound_id) <> 0
BEGIN SELECT RAISE(ABORT, 'outbound arguments are fixed before the first submission'); END;
CREATE TRIGGER local_outbound_ack_items_fixed BEFORE INSERT ON local_outbound_ack_items
WHEN (SELECT attempts FROM local_outbound WHERE outbound_id = NEW.outbound_id) <> 0
BEGIN SELECT RAISE(ABORT, 'outbound arguments are fixed before the first submission'); END;
CREATE TRIGGER local_outbound_entries_fixed BEFORE INSERT ON local_outbound_entries
WHEN (SELECT attempts FROM local_outbound WHERE outbound_id = NEW.outbound_id) <> 0
BEGIN SELECT RAISE(ABORT, 'outbound arguments are fixed before the first submission'); END;
CREATE TRIGGER local_outbound_deletes_fixed BEFORE INSERT ON local_outbound_deletes
WHEN (SELECT attempts FROM local_outbound WHERE outbound_id = NEW.outbound_id) <> 0
BEGIN SELECT RAISE(ABORT, 'outbound arguments are fixed before the first submission'); END;
CREATE TRIGGER local_outbound_recipients_immutable BEFORE UPDATE ON local_outbound_recipients
BEGIN SELECT RAISE(ABORT, 'outbound arguments are immutable'); END;
CREATE TRIGGER local_outbound_ack_items_immutable BEFORE UPDATE ON local_outbound_ack_items
BEGIN SELECT RAISE(ABORT, 'outbound arguments are immutable'); END;
CREATE TRIGGER local_outbound_entries_immutable BEFORE UPDATE ON local_outbound_entries
BEGIN SELECT RAISE(ABORT, 'outbound arguments are immutable'); END;

-- ACK stages follow the local state: received only for an item stored here, processed only
-- for an item whose work is done here.
CREATE TRIGGER local_processed_only_after_done BEFORE INSERT ON local_outbound_ack_items
WHEN NEW.stage = 'processed'
  AND NOT EXISTS (SELECT 1 FROM local_work WHERE item_id = NEW.item_id AND state = 'done')
BEGIN SELECT RAISE(ABORT, 'processed is acknowledged only after the local work is done'); END;
CREATE TRIGGER local_received_only_when_stored BEFORE INSERT ON local_outbound_ack_items
WHEN NEW.stage = 'received'
  AND NOT EXISTS (SELECT 1 FROM local_work WHERE item_id = NEW.item_id)
BEGIN SELECT RAISE(ABORT, 'received is acknowledged only for an item stored with its work record'); END;
