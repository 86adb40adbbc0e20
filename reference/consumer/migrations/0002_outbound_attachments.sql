-- 0002 outbound attachments: the blob ids a queued send or reply attaches (attachment_ids of
-- message.send, §8.1), in the order given. Like the other child rows of a queued write they are
-- written with it, before its first submission, and never change or vanish afterwards: every
-- resubmission rebuilds the same request body.

CREATE TABLE local_outbound_attachments (
    outbound_id INTEGER NOT NULL REFERENCES local_outbound (outbound_id),
    position INTEGER NOT NULL CHECK (position BETWEEN 0 AND 15),
    blob_id TEXT NOT NULL CHECK (length(blob_id) BETWEEN 1 AND 96),
    PRIMARY KEY (outbound_id, position),
    UNIQUE (outbound_id, blob_id)
);

CREATE TRIGGER local_outbound_attachments_send_only BEFORE INSERT ON local_outbound_attachments
WHEN (SELECT operation FROM local_outbound WHERE outbound_id = NEW.outbound_id) <> 'message.send'
BEGIN SELECT RAISE(ABORT, 'only a message.send attaches blobs'); END;
CREATE TRIGGER local_outbound_attachments_fixed BEFORE INSERT ON local_outbound_attachments
WHEN (SELECT attempts FROM local_outbound WHERE outbound_id = NEW.outbound_id) <> 0
BEGIN SELECT RAISE(ABORT, 'outbound arguments are fixed before the first submission'); END;
CREATE TRIGGER local_outbound_attachments_immutable BEFORE UPDATE ON local_outbound_attachments
BEGIN SELECT RAISE(ABORT, 'outbound arguments are immutable'); END;
CREATE TRIGGER local_outbound_attachments_permanent BEFORE DELETE ON local_outbound_attachments
BEGIN SELECT RAISE(ABORT, 'outbound arguments are permanent'); END;
