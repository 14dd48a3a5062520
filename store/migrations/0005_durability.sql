-- reaped_at: a living runner has put right what this runner left behind (its tasks
-- recorded, its graphs adopted, its processes killed), so it need not be looked at again.
ALTER TABLE runners ADD COLUMN reaped_at INTEGER;

-- expired_at: the graph finished longer ago than the retention; its live logs were removed
-- and are read from its artifact.
ALTER TABLE graphs ADD COLUMN expired_at INTEGER;

-- One retained archive per graph: its logs and a manifest, written once it finished.
CREATE TABLE artifacts (
    graph_id   TEXT    PRIMARY KEY REFERENCES graphs(id),
    path       TEXT    NOT NULL,
    bytes      INTEGER NOT NULL,
    sha256     TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);
