-- A cancel asked for by another process (the operator CLI, or a second server on the
-- workspace) is recorded on the task; the runner that owns the graph carries it out, since
-- it alone may change the state of the tasks it runs.
ALTER TABLE tasks ADD COLUMN cancel_requested_at INTEGER;
ALTER TABLE tasks ADD COLUMN cancel_grace_ms INTEGER;
CREATE INDEX tasks_cancel_requested ON tasks(graph_id) WHERE cancel_requested_at IS NOT NULL;
