-- Task graphs. A graph belongs to the runner that accepted it (runner_id); the runner that
-- runs its tasks records every state change here, so any process on the workspace can read
-- the truth and a runner starting after a crash can reconcile what a dead one left.
CREATE TABLE graphs (
    id              TEXT    PRIMARY KEY,       -- sortable by creation
    name            TEXT    NOT NULL,
    runner_id       TEXT    NOT NULL REFERENCES runners(id),
    idempotency_key TEXT    UNIQUE,
    max_parallel    INTEGER NOT NULL,
    fail_fast       INTEGER NOT NULL,
    task_count      INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,          -- unix milliseconds
    finished_at     INTEGER,                   -- set when the last task is terminal
    version         INTEGER NOT NULL DEFAULT 0 -- bumped on every task state change
);
CREATE INDEX graphs_unfinished ON graphs(runner_id) WHERE finished_at IS NULL;

CREATE TABLE tasks (
    graph_id    TEXT    NOT NULL REFERENCES graphs(id),
    id          TEXT    NOT NULL,
    seq         INTEGER NOT NULL,              -- position in the submitted graph
    command     TEXT    NOT NULL,
    cwd         TEXT    NOT NULL,              -- absolute, resolved at submission
    env         TEXT    NOT NULL,              -- JSON object
    depends_on  TEXT    NOT NULL,              -- JSON array of task ids
    timeout_sec INTEGER NOT NULL,
    retries     INTEGER NOT NULL,
    status      TEXT    NOT NULL,
    error_code  TEXT,
    exit_code   INTEGER,
    signal      TEXT,
    message     TEXT,
    attempt     INTEGER NOT NULL DEFAULT 0,
    pid         INTEGER,
    pgid        INTEGER,
    proc_start  INTEGER,
    started_at  INTEGER,
    finished_at INTEGER,
    PRIMARY KEY (graph_id, id)
);
CREATE UNIQUE INDEX tasks_by_seq ON tasks(graph_id, seq);
CREATE INDEX tasks_by_status ON tasks(status, graph_id);
