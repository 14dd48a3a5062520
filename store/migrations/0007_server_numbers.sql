-- Server numbers: every server that opens the store takes the next number, and names its
-- PTY sessions after it (s<number>-<k>), so that a session id names one session on the
-- workspace, whichever of the servers sharing it holds the session. One row; the number
-- only grows, and is never handed out twice.
CREATE TABLE server_numbers (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    last INTEGER NOT NULL
);
INSERT INTO server_numbers (id, last) VALUES (1, 0);
