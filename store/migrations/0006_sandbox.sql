-- What confines a task (the sandbox and network setting it was accepted under, after the
-- call's own tightening); a runner that runs it applies that, or its own where its own is
-- tighter. NULL: recorded before the sandbox existed, so the runner's own applies.
ALTER TABLE tasks ADD COLUMN sandbox TEXT;
ALTER TABLE tasks ADD COLUMN network TEXT;
