-- Where a task runs (turn 3, "Scale-out: Kubernetes and object storage"): its executor,
-- 'local' or 'kubernetes' (NULL: recorded before executors existed, so local), and for a
-- pod the cpu and memory it asks for (Kubernetes quantities; NULL: none asked).
ALTER TABLE tasks ADD COLUMN executor TEXT;
ALTER TABLE tasks ADD COLUMN cpu TEXT;
ALTER TABLE tasks ADD COLUMN memory TEXT;
-- Where the current (or last) attempt of a remote task runs: its Job, its pod and the pod's
-- node, each NULL until known; and log_start, the byte of the task's log where that
-- attempt's output starts, so that a runner that re-attaches after a restart resumes
-- following the pod's log at the byte the log has (no line lost, none written twice).
ALTER TABLE tasks ADD COLUMN job TEXT;
ALTER TABLE tasks ADD COLUMN pod TEXT;
ALTER TABLE tasks ADD COLUMN node TEXT;
ALTER TABLE tasks ADD COLUMN log_start INTEGER;
-- The snapshot of the workspace a graph's remote tasks get (its sha256): made once per
-- graph, when its first remote task starts, and kept for the runner that re-attaches.
ALTER TABLE graphs ADD COLUMN snapshot TEXT;
-- An artifact in object storage: where each log's compressed bytes are in it (JSON), so a
-- slice of a log is served by a range read of that log's part rather than the whole object.
ALTER TABLE artifacts ADD COLUMN log_index TEXT;
