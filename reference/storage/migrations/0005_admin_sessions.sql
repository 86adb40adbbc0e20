-- 0005 admin sessions: the operator dashboard's signed-in browsers. Only a SHA-256 digest of the
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
