// Package migrations holds the database schema as ordered, forward-only SQL files.
package migrations

import "embed"

// FS holds the SQL migrations, applied in file-name order by goose.
//
//go:embed *.sql
var FS embed.FS
