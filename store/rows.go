package store

import (
	"context"
	"database/sql"
)

// This file holds the one loop every multi-row query shares, so that each query says only
// its SQL and how one row becomes a value, and none can forget rows.Err or rows.Close.

// scanner is a row to read: *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// querier runs a query: the pool, or a transaction whose reads must see its own writes.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryAll runs query on q and makes a value of each row with scan, in the rows' order.
func queryAll[T any](ctx context.Context, q querier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return collect(rows, scan)
}

// collect makes a value of each of rows with scan, and closes rows whatever happens, so a
// caller inside a transaction can go straight on to its next statement. No rows is a nil
// slice.
func collect[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// scanID reads a row of one text column, an id.
func scanID(row scanner) (string, error) {
	var id string
	err := row.Scan(&id)
	return id, err
}
