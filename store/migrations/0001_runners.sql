-- Every server process is a runner. The row lets other processes on the same workspace tell
-- whether it is still alive: its lease (renewed by heartbeat) and its process identity
-- (pid + process start time + boot id, so a reused pid is not mistaken for it).
CREATE TABLE runners (
    id               TEXT    PRIMARY KEY,      -- the runner's epoch: unique, sortable by start
    pid              INTEGER NOT NULL,
    proc_start       INTEGER NOT NULL,         -- /proc/<pid>/stat starttime, clock ticks since boot; 0 = unknown
    boot_id          TEXT    NOT NULL,         -- pid and proc_start only mean something within one boot
    hostname         TEXT    NOT NULL,
    version          TEXT    NOT NULL,
    started_at       INTEGER NOT NULL,         -- unix milliseconds
    heartbeat_at     INTEGER NOT NULL,
    lease_expires_at INTEGER NOT NULL,
    stopped_at       INTEGER                   -- set on a clean exit
);
