package store

import (
	"context"
	"database/sql"
	"fmt"
)

// NextServerNumber hands the calling server the workspace's next server number (1, 2, ...;
// never the same twice, whatever other processes take meanwhile): its PTY session ids
// carry it, so that they are unique across the servers sharing the workspace.
func (db *DB) NextServerNumber(ctx context.Context) (int, error) {
	var n int
	err := db.write(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `UPDATE server_numbers SET last = last + 1 WHERE id = 1 RETURNING last`).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("next server number: %w", err)
	}
	return n, nil
}
