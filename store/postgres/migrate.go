package postgres

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairnhq/cairn"
	migs "github.com/cairnhq/cairn/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations are the embedded migrations in version order, read once; a
// mistake in the embedded set is errMigrations, which Open and New return.
var migrations, errMigrations = migs.Read(migrationFS, "migrations")

// latestVersion is the schema version this package writes.
var latestVersion = len(migrations)

// migrate brings the schema up to latestVersion. A schema that is already
// there costs one read and no lock. Otherwise the migrations run in one
// transaction that holds an advisory lock keyed by the schema name, so many
// processes opening a new namespace at once apply each migration exactly
// once; the others wait, then find nothing left to do.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if errMigrations != nil {
		return fmt.Errorf("postgres: embedded %w", errMigrations)
	}
	v, err := appliedVersion(ctx, pool, schema)
	if err != nil {
		return err
	}
	if err := checkVersion(schema, v); err != nil || v == latestVersion {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return migrateTx(ctx, tx, schema, latestVersion)
	})
}

// goSteps are the parts of migrations written in Go, by migration name.
// Each runs in its migration's transaction, after its SQL, with the
// search_path set to the schema.
var goSteps = map[string]func(context.Context, pgx.Tx) error{
	"0008_session_search": indexEvents,
}

// appliedVersion returns the highest recorded migration of schema, or 0 when
// the schema or its schema_migrations table does not exist yet.
func appliedVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, schema string) (int, error) {
	table := pgx.Identifier{schema, "schema_migrations"}.Sanitize()
	var exists bool
	if err := q.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := q.QueryRow(ctx, "SELECT COALESCE(max(version), 0) FROM "+table).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// checkVersion refuses a schema that a newer release has migrated past what
// this one knows: its tables may not mean what this code thinks.
func checkVersion(schema string, v int) error {
	if v > latestVersion {
		return fmt.Errorf("%w: schema %q is at version %d, this cairn knows versions up to %d; upgrade cairn to use it",
			cairn.ErrSchemaTooNew, schema, v, latestVersion)
	}
	return nil
}

// migrateTx brings the schema up to version to, in tx.
func migrateTx(ctx context.Context, tx pgx.Tx, schema string, to int) error {
	q := pgx.Identifier{schema}.Sanitize()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(schema)); err != nil {
		return fmt.Errorf("lock schema %q for migration: %w", schema, err)
	}
	if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+q); err != nil {
		return fmt.Errorf("create schema %q: %w", schema, err)
	}
	if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+q); err != nil {
		return fmt.Errorf("migrate schema %q: %w", schema, err)
	}
	table := pgx.Identifier{schema, "schema_migrations"}.Sanitize()
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrate schema %q: %w", schema, err)
	}
	// Read again under the lock: another process may have migrated while
	// this one waited.
	v, err := appliedVersion(ctx, tx, schema)
	if err != nil {
		return err
	}
	if err := checkVersion(schema, v); err != nil {
		return err
	}
	for _, m := range migrations[v:max(v, to)] {
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate schema %q: %s: %w", schema, m.Name, err)
		}
		if step := goSteps[m.Name]; step != nil {
			if err := step(ctx, tx); err != nil {
				return fmt.Errorf("migrate schema %q: %s: %w", schema, m.Name, err)
			}
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+table+" (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
			return fmt.Errorf("migrate schema %q: record %s: %w", schema, m.Name, err)
		}
	}
	return nil
}

// lockKey is the advisory lock that serialises migrations of one schema.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("cairn.migrate\x00" + schema))
	return int64(h.Sum64())
}
