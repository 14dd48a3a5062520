package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ErrNotClaimable reports a claim (ClaimGraph) of a graph that is finished, or no longer
// owned by the runner it was handed over from: a runner that reconciled the one that
// stored it adopted it meanwhile, and runs it.
var ErrNotClaimable = errors.New("the graph is not there to claim")

// ClaimGraph hands an unfinished graph from runner from (the server that stored it for a
// detached runner, and never ran it) to runner to (the detached runner, which is the
// calling process), in one transaction. It fails with ErrNotClaimable when from no longer
// owns it or it is finished, and with ErrLeaseLost when to is stopped.
func (db *DB) ClaimGraph(ctx context.Context, graphID, from, to string) (GraphRow, error) {
	var g GraphRow
	err := db.write(ctx, func(tx *sql.Tx) error {
		var stopped sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT stopped_at FROM runners WHERE id = ?`, to).Scan(&stopped); err != nil {
			return fmt.Errorf("runner %s: %w", to, err)
		}
		if stopped.Valid {
			return fmt.Errorf("runner %s is stopped: %w", to, ErrLeaseLost)
		}
		res, err := tx.ExecContext(ctx, `UPDATE graphs SET runner_id = ?, version = version + 1
			WHERE id = ? AND runner_id = ? AND finished_at IS NULL`, to, graphID, from)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("graph %s from runner %s: %w", graphID, from, ErrNotClaimable)
		}
		g, err = scanGraph(tx.QueryRowContext(ctx, graphSelect+` WHERE id = ?`, graphID))
		return err
	})
	if err != nil {
		return GraphRow{}, fmt.Errorf("claim graph: %w", err)
	}
	return g, nil
}
