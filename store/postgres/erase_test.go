package postgres_test

import (
	"context"
	"encoding/hex"
	"net/url"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/postgres"
)

// TestStore_Erasure writes a marker into a session, deletes it, and queries
// every table of the test's schemas for the marker (as text, as the hex
// of bytea, and as its token in the text index's tsvector), with and
// without encryption. Deleted rows stay on disk as dead
// tuples until VACUUM; encrypted, the marker was never in any row.
func TestStore_Erasure(t *testing.T) {
	pool := adminPool(t)
	crypttest.Run(t, crypttest.Backend{
		URL: dsn(t),
		Raw: func(t *testing.T, needle string) []string {
			ctx := t.Context()
			rows, err := pool.Query(ctx, `SELECT table_schema, table_name FROM information_schema.tables
				WHERE table_schema LIKE 'cairn\_er\_%' AND table_type = 'BASE TABLE'`)
			if err != nil {
				t.Fatal(err)
			}
			tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgx.Identifier, error) {
				var schema, name string
				err := r.Scan(&schema, &name)
				return pgx.Identifier{schema, name}, err
			})
			if err != nil {
				t.Fatal(err)
			}
			var where []string
			lexeme := indexed(needle)
			for _, tb := range tables {
				var n int
				q := "SELECT count(*) FROM " + tb.Sanitize() + " t WHERE strpos(t::text, $1) > 0 OR strpos(t::text, $2) > 0 OR strpos(t::text, $3) > 0"
				if err := pool.QueryRow(ctx, q, needle, hex.EncodeToString([]byte(needle)), lexeme).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n > 0 {
					where = append(where, tb.Sanitize())
				}
			}
			return where
		},
		Drop: func(t *testing.T, ns string) {
			q := "DROP SCHEMA IF EXISTS " + pgx.Identifier{postgres.Schema(ns)}.Sanitize() + " CASCADE"
			if _, err := pool.Exec(context.Background(), q); err != nil {
				t.Errorf("drop schema of namespace %s: %v", ns, err)
			}
		},
	})
}

// indexed is how the text index (session_text) holds needle's longest
// token, as a tsvector's text shows it: a marker "cairn-marker-1f2e…" is
// there as 'cairn', 'marker' and '1f2e…', and the last is the marker's
// own. A needle without a token of 8 characters or more gives needle.
func indexed(needle string) string {
	long := ""
	for _, t := range longterm.Tokens(needle) {
		if len(t) > len(long) {
			long = t
		}
	}
	if len(long) < 8 {
		return needle
	}
	return "'" + long + "'"
}

// TestLongTerm_Erasure writes markers into every field of long-term items,
// erases them (Delete, DeleteNamespace, a replace, Sweep), and queries
// every table of the namespace's schema for them (as text and as the hex
// of bytea, the tsvector included), in clear and encrypted. The store is
// opened by URL, through longterm.Open, with its namespace parameter.
func TestLongTerm_Erasure(t *testing.T) {
	pool := adminPool(t)
	ns := "lter_" + testenv.RandHex(6)
	dropSchemaLater(t, ns)
	u, err := url.Parse(dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("namespace", ns)
	u.RawQuery = q.Encode()
	schema := postgres.Schema(ns)
	crypttest.RunLongTerm(t, crypttest.LongTermBackend{
		URL: u.String(),
		Raw: func(t *testing.T, needle string) []string {
			ctx := t.Context()
			rows, err := pool.Query(ctx, `SELECT table_name FROM information_schema.tables
				WHERE table_schema = $1 AND table_type = 'BASE TABLE'`, schema)
			if err != nil {
				t.Fatal(err)
			}
			tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			if len(tables) == 0 {
				t.Fatalf("no table in schema %s", schema)
			}
			var where []string
			for _, name := range tables {
				tb := pgx.Identifier{schema, name}
				text := needle
				if !utf8.ValidString(needle) {
					text = hex.EncodeToString([]byte(needle)) // raw bytes (a vector) can be in a bytea only
				}
				var n int
				q := "SELECT count(*) FROM " + tb.Sanitize() + " t WHERE strpos(t::text, $1) > 0 OR strpos(t::text, $2) > 0"
				if err := pool.QueryRow(ctx, q, text, hex.EncodeToString([]byte(needle))).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n > 0 {
					where = append(where, tb.Sanitize())
				}
			}
			return where
		},
	})
}
