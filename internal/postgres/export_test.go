package postgres

// PruneLockKey is the advisory lock of Prune, for tests that hold it.
const PruneLockKey = pruneLockKey
