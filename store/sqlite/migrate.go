package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"github.com/cairnhq/cairn"
	schema "github.com/cairnhq/cairn/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrNewerSchema is returned by Open for a database whose schema was
// written by a newer version of cairn than this one. Upgrade cairn to open
// it; nothing in the file was changed.
//
// Deprecated: it is cairn.ErrSchemaTooNew, the one error of every store.
var ErrNewerSchema = cairn.ErrSchemaTooNew

// migrations returns the embedded migrations in order. Their numbers must
// run 1, 2, 3, … without gaps.
func migrations() ([]schema.Migration, error) {
	return schema.Read(migrationFiles, "migrations")
}

// goSteps are the parts of migrations that SQL cannot do, by version: each
// runs after its migration's SQL, in the same transaction.
var goSteps = map[int]func(context.Context, *sql.Tx) error{
	8:  indexEvents,
	11: fillSizes,
}

// SchemaVersion is the schema version this package writes: the number of
// its last migration.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// migrate brings the schema up to date. It first reads the schema's
// version without a lock that blocks anyone: a database already at this
// package's version (every open but the first) is left as it is, so that
// opening a store never waits for another process's write transaction.
// Otherwise it migrates in one immediate transaction, so that two
// processes opening a new file at once apply each migration once; that
// transaction reads the version again under the write lock. Each applied
// migration is recorded in schema_migrations.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return migrateTo(ctx, db, ms)
}

// migrateTo brings the schema up to the last of ms, the first migrations
// of the package (all of them but in tests).
func migrateTo(ctx context.Context, db *sql.DB, ms []schema.Migration) error {
	current, err := schemaVersion(ctx, db)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if current == len(ms) {
		return nil
	}
	if err := newer(current, len(ms)); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := newer(current, len(ms)); err != nil {
		return err
	}
	for _, m := range ms[current:] {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate: apply %s: %w", m.File, err)
		}
		if step := goSteps[m.Version]; step != nil {
			if err := step(ctx, tx); err != nil {
				return fmt.Errorf("migrate: apply %s: %w", m.File, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
			m.Version, time.Now().UnixNano()); err != nil {
			return fmt.Errorf("migrate: record %s: %w", m.File, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// schemaVersion reads the version of the database's schema outside any
// transaction (a read, which no writer blocks in WAL mode): 0 for a
// database without schema_migrations.
func schemaVersion(ctx context.Context, db *sql.DB) (int, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master
		WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n); err != nil || n == 0 {
		return 0, err
	}
	var v int
	err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// newer refuses a schema at version current when this package knows up to
// known.
func newer(current, known int) error {
	if current > known {
		return fmt.Errorf("migrate: %w: the file is at version %d, this cairn knows up to %d; upgrade cairn to open it",
			cairn.ErrSchemaTooNew, current, known)
	}
	return nil
}
