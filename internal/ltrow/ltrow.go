// Package ltrow reads and writes a long-term item as the SQL stores keep
// it in a row: its value and labels as JSON text, its vector encoded
// (ltdriver.EncodeVector), its times in Unix nanoseconds (unixnano).
package ltrow

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/internal/unixnano"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// Row is an item's columns as scanned, before Item decodes them.
type Row struct {
	item                      longterm.Item
	value, labels             string
	vector                    []byte
	created, updated, expires int64
}

// Dest returns the scan destinations of an item's columns, after extra:
// namespace, key, value, text (into text, which the caller owns),
// labels, vector, vector_model, source_session, source_seq, version,
// created_at, updated_at and expires_at.
func (r *Row) Dest(text any, extra ...any) []any {
	return append(extra, &r.item.Namespace, &r.item.Key, &r.value, text, &r.labels, &r.vector, &r.item.VectorModel,
		&r.item.Source.Session, &r.item.Source.Seq, &r.item.Version, &r.created, &r.updated, &r.expires)
}

// Item decodes the row into its item, with text as its text.
func (r *Row) Item(text string) (longterm.Item, error) {
	it := r.item
	it.Text = text
	it.Value = json.RawMessage(r.value)
	if r.labels != "{}" && r.labels != "" {
		if err := json.Unmarshal([]byte(r.labels), &it.Labels); err != nil {
			return it, fmt.Errorf("item %s %s: labels: %w", it.Namespace, it.Key, err)
		}
	}
	v, err := ltdriver.DecodeVector(r.vector)
	if err != nil {
		return it, fmt.Errorf("item %s %s: %w", it.Namespace, it.Key, err)
	}
	it.Vector = v
	it.CreatedAt, it.UpdatedAt, it.ExpiresAt = unixnano.Time(r.created), unixnano.Time(r.updated), unixnano.Time(r.expires)
	return it, nil
}

// Labels is the labels column of labels l: their JSON object, "{}" for
// none.
func Labels(l map[string]string) (string, error) {
	if len(l) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(l)
	return string(b), err
}

// Scanner reads the columns of one row.
type Scanner interface{ Scan(dest ...any) error }

// Rows are the rows of a query, read one at a time.
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// Items reads every row of rows as an item with read.
func Items(rows Rows, read func(Scanner, ...any) (longterm.Item, error)) ([]longterm.Item, error) {
	var items []longterm.Item
	for rows.Next() {
		it, err := read(rows)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, rows.Err()
}

// ByID reads every row of rows, an id column then an item's, with read:
// the items by their ids.
func ByID(rows Rows, read func(Scanner, ...any) (longterm.Item, error)) (map[int64]longterm.Item, error) {
	byID := map[int64]longterm.Item{}
	for rows.Next() {
		var id int64
		it, err := read(rows, &id)
		if err != nil {
			return nil, err
		}
		byID[id] = it
	}
	return byID, rows.Err()
}

// Hits reads every row of rows as a hit whose Ref is its id: the columns
// id, namespace and key, then the text score when scored.
func Hits(rows Rows, scored bool) ([]ltdriver.Hit, error) {
	var out []ltdriver.Hit
	var h ltdriver.Hit
	var id int64
	dest := []any{&id, &h.Namespace, &h.Key, &h.Text}
	if !scored {
		dest = dest[:3]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		h.Ref = id
		out = append(out, h)
	}
	return out, rows.Err()
}

// VectorHits reads every row of rows, the columns id, namespace, key and
// an encoded vector (ltdriver.EncodeVector), and returns the best
// q.Candidates of them by cosine similarity to q.Vector, as hits whose Ref
// is the id. B is the type the vector is scanned into: []byte, or a type
// the driver fills without a copy (sql.RawBytes).
func VectorHits[B ~[]byte](rows Rows, q ltdriver.Search) ([]ltdriver.Hit, error) {
	top := ltdriver.NewTopHits(q.Candidates, true)
	var vec B
	for rows.Next() {
		var h ltdriver.Hit
		var id int64
		if err := rows.Scan(&id, &h.Namespace, &h.Key, &vec); err != nil {
			return nil, err
		}
		h.Ref, h.Vector = id, ltdriver.CosineEncoded(q.Vector, []byte(vec))
		top.Offer(h)
	}
	return top.Hits(), rows.Err()
}

// SkipNamespaces is ltdriver.SkipNamespaces for a store that seeks with
// one SQL query: first returns the namespace of the first live item whose
// path compares with pos by op (">" or ">=") and is before hi, or
// noRows, the driver's error for a query that returned none.
func SkipNamespaces(opts longterm.NamespaceOptions, noRows error, first func(op, pos, hi string) (string, error)) (*longterm.NamespacePage, error) {
	return ltdriver.SkipNamespaces(opts, func(pos, hi string, inclusive bool) (string, bool, error) {
		op := ">"
		if inclusive {
			op = ">="
		}
		ns, err := first(op, pos, hi)
		if errors.Is(err, noRows) {
			return "", false, nil
		}
		return ns, err == nil, err
	})
}
