-- 0004 message bodies: a message's body (its canonical JSON, at most 64 KiB) is kept in
-- its own row, so that a send is one commit plan. A body written before this migration stays an
-- object of the blob store named by body_ref; exactly one of body_ref and body is set.
-- SQLite cannot relax a NOT NULL column in place, and a table that other tables reference
-- cannot be dropped with rows pointing at it: messages and the two tables that reference it are
-- copied aside, dropped (children first), created again and filled, with their indexes and
-- triggers; foreign keys are checked at the end of the migration's transaction.

PRAGMA defer_foreign_keys = ON;

CREATE TABLE messages_before_0004 AS SELECT * FROM messages;
CREATE TABLE message_recipients_before_0004 AS SELECT * FROM message_recipients;
CREATE TABLE message_attachments_before_0004 AS SELECT * FROM message_attachments;
DROP TABLE message_recipients;
DROP TABLE message_attachments;
DROP TABLE messages;

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
    body_ref TEXT UNIQUE,
    body_sha256 BLOB NOT NULL CHECK (length(body_sha256) = 32),
    body_size INTEGER NOT NULL CHECK (body_size >= 0),
    metadata_json TEXT,
    committed_at INTEGER NOT NULL,
    -- the body itself (UTF-8 canonical JSON) when it is not an object named by body_ref
    body TEXT CHECK (body IS NULL OR length(CAST(body AS BLOB)) = body_size),
    PRIMARY KEY (space_id, message_id),
    FOREIGN KEY (space_id, producer_id) REFERENCES actors (space_id, actor_id),
    FOREIGN KEY (space_id, thread_id) REFERENCES threads (space_id, thread_id),
    FOREIGN KEY (space_id, in_reply_to) REFERENCES messages (space_id, message_id),
    CHECK ((body_ref IS NULL) <> (body IS NULL))
);

CREATE TABLE message_recipients (
    space_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    PRIMARY KEY (space_id, message_id, actor_id),
    FOREIGN KEY (space_id, message_id) REFERENCES messages (space_id, message_id),
    FOREIGN KEY (space_id, actor_id) REFERENCES actors (space_id, actor_id)
);

CREATE TABLE message_attachments (
    space_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    position INTEGER NOT NULL CHECK (position >= 0),
    blob_id TEXT NOT NULL,
    PRIMARY KEY (space_id, message_id, position),
    FOREIGN KEY (space_id, message_id) REFERENCES messages (space_id, message_id)
);

INSERT INTO messages (space_id, message_id, submission_id, producer_id, thread_id,
    in_reply_to, kind, subject, body_ref, body_sha256, body_size, metadata_json, committed_at)
SELECT space_id, message_id, submission_id, producer_id, thread_id, in_reply_to, kind, subject,
    body_ref, body_sha256, body_size, metadata_json, committed_at
FROM messages_before_0004;
INSERT INTO message_recipients (space_id, message_id, actor_id)
SELECT space_id, message_id, actor_id FROM message_recipients_before_0004;
INSERT INTO message_attachments (space_id, message_id, position, blob_id)
SELECT space_id, message_id, position, blob_id FROM message_attachments_before_0004;
DROP TABLE messages_before_0004;
DROP TABLE message_recipients_before_0004;
DROP TABLE message_attachments_before_0004;

CREATE INDEX message_attachments_blob ON message_attachments (space_id, blob_id);
CREATE INDEX messages_thread ON messages (space_id, thread_id);
CREATE TRIGGER messages_permanent BEFORE DELETE ON messages
BEGIN SELECT RAISE(ABORT, 'messages are permanent'); END;
CREATE TRIGGER messages_immutable BEFORE UPDATE ON messages
BEGIN SELECT RAISE(ABORT, 'messages are immutable'); END;
CREATE TRIGGER message_recipients_immutable BEFORE UPDATE ON message_recipients
BEGIN SELECT RAISE(ABORT, 'message recipients are immutable'); END;
CREATE TRIGGER message_recipients_permanent BEFORE DELETE ON message_recipients
BEGIN SELECT RAISE(ABORT, 'message recipients are permanent'); END;
