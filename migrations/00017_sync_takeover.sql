-- +goose Up

-- A sync's holder is now a random instance id per process (host:pid:random), so a
-- process restarted with the same host name and pid (PID 1 in a container) no longer
-- renews, and so never finishes, the rows of the one that was killed. A publish hook's
-- job whose holder stopped renewing it is taken over by another replica and run again;
-- attempts counts its runs, and one that stopped its replica syncMaxAttempts times is
-- failed rather than run for ever.
ALTER TABLE index_syncs ADD COLUMN attempts integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE index_syncs DROP COLUMN attempts;
