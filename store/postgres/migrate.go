package postgres

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one numbered SQL file of migrations/.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the embedded migrations in version order, read once.
var migrations = mustReadMigrations(migrationFS)

// latestVersion is the schema version this package writes.
var latestVersion = migrations[len(migrations)-1].version

// mustReadMigrations reads "NNNN_name.sql" files, checking that versions
// start at 1 and are dense, so that a mistake in the embedded set shows at
// the first test rather than in a production schema.
func mustReadMigrations(fsys fs.FS) []migration {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil || len(names) == 0 {
		panic(fmt.Sprintf("postgres: no embedded migrations: %v", err))
	}
	var out []migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			panic("postgres: migration file " + base + " is not named NNNN_name.sql")
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(base, ".sql"), sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i, m := range out {
		if m.version != i+1 {
			panic(fmt.Sprintf("postgres: migration %s has version %d, want %d (versions are dense from 1)", m.name, m.version, i+1))
		}
	}
	return out
}

// migrate brings the schema up to latestVersion. A schema that is already
// there costs one read and no lock. Otherwise the migrations run in one
// transaction that holds an advisory lock keyed by the schema name, so many
// processes opening a new namespace at once apply each migration exactly
// once; the others wait, then find nothing left to do.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	v, err := appliedVersion(ctx, pool, schema)
	if err != nil {
		return err
	}
	if err := checkVersion(schema, v); err != nil || v == latestVersion {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return migrateTx(ctx, tx, schema)
	})
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
			ErrSchemaTooNew, schema, v, latestVersion)
	}
	return nil
}

func migrateTx(ctx context.Context, tx pgx.Tx, schema string) error {
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
	for _, m := range migrations[v:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("migrate schema %q: %s: %w", schema, m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+table+" (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			return fmt.Errorf("migrate schema %q: record %s: %w", schema, m.name, err)
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
