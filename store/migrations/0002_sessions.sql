-- PTY sessions are volatile (they live in the server's memory), but their process identities
-- are recorded so that a runner starting after a crash can kill what the dead runner's
-- sessions left running.
CREATE TABLE sessions (
    runner_id  TEXT    NOT NULL REFERENCES runners(id),
    id         TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    command    TEXT    NOT NULL,
    cwd        TEXT    NOT NULL,
    pid        INTEGER NOT NULL,
    pgid       INTEGER NOT NULL,
    proc_start INTEGER NOT NULL,               -- see runners.proc_start
    started_at INTEGER NOT NULL,
    closed_at  INTEGER,
    PRIMARY KEY (runner_id, id)
);
CREATE INDEX sessions_open ON sessions(runner_id) WHERE closed_at IS NULL;
