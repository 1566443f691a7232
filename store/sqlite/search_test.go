package sqlite

import (
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// oldSession is a session as a database of schema version 7 holds it.
type oldSession struct {
	ns, id string
	events []cairn.Event
}

var oldSessions = []oldSession{
	{cairn.DefaultNamespace, "a", storetest.Conversation(0, "r1", "find the zebracorn please")},
	{cairn.DefaultNamespace, "b", storetest.UserTurn(0, "r1", "nothing to see")},
	{cairn.DefaultNamespace, "c", storetest.UserTurn(0, "r1", "zebracorn zebracorn zebracorn")},
	{"other", "d", storetest.UserTurn(0, "r1", "a zebracorn elsewhere")},
}

// oldFile makes a database of schema version 7 holding sessions, written
// as that version's Create and Append did (the session's row, then the
// events' rows), and runs change on it, if given, before it closes it.
func oldFile(t *testing.T, sessions []oldSession, change string) string {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 8 || ms[7].File != "0008_search.sql" {
		t.Fatalf("migration 8 is not 0008_search.sql")
	}
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", dsn(path, []string{"foreign_keys(ON)"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := migrateTo(t.Context(), db, ms[:7]); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, o := range sessions {
		bodies, err := envelopes(o.events)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(t.Context(), `INSERT INTO sessions
			(namespace, id, created_at, updated_at, expires_at, status, steps, first_message, labels, last_seq)
			VALUES (?, ?, 1, 1, 0, 'completed', 1, '', '{}', ?)`, o.ns, o.id, len(o.events)); err != nil {
			t.Fatal(err)
		}
		for i, e := range o.events {
			if _, err := tx.ExecContext(t.Context(), `INSERT INTO events (namespace, session_id, seq, envelope) VALUES (?, ?, ?, ?)`,
				o.ns, o.id, e.Seq, bodies[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if change != "" {
		if _, err := tx.ExecContext(t.Context(), change); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return path
}

// openOld opens the database at path, which migrates it, and checks its
// version and its search index.
func openOld(t *testing.T, path string) *Store {
	t.Helper()
	s := openTest(t, path, Options{})
	if v, err := schemaVersion(t.Context(), s.w); err != nil || v != SchemaVersion() {
		t.Fatalf("schema version after the migration: %d, %v; want %d", v, err, SchemaVersion())
	}
	if err := CheckSearchIndex(t.Context(), s); err != nil {
		t.Errorf("integrity of the search index after the migration: %v", err)
	}
	return s
}

// TestMigrate_IndexesOldEvents opens a database of schema version 7
// holding sessions: migration 8 indexes their events, so that Search
// finds them as it finds the same sessions appended by this version, with
// the same scores.
func TestMigrate_IndexesOldEvents(t *testing.T) {
	old := openOld(t, oldFile(t, oldSessions, ""))

	// The same sessions, appended by this version.
	fresh := openTest(t, filepath.Join(t.TempDir(), "new.db"), Options{})
	other := openTest(t, fresh.path, Options{StoreOptions: cairn.StoreOptions{Namespace: "other"}})
	for _, o := range oldSessions {
		s := fresh
		if o.ns != cairn.DefaultNamespace {
			s = other
		}
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: o.id}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(t.Context(), o.id, 0, o.events...); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"zebracorn", "héllo", "arithmetic 日本", "nothing", "echo"} {
		got, err := old.Search(t.Context(), q, 10)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh.Search(t.Context(), q, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			t.Fatalf("Search(%q) of the sessions appended finds nothing", q)
		}
		same := len(got) == len(want)
		for i := 0; same && i < len(got); i++ {
			same = got[i].ID == want[i].ID && got[i].Seq == want[i].Seq &&
				math.Abs(got[i].Score-want[i].Score) <= 1e-9*math.Abs(want[i].Score)
		}
		if !same {
			t.Errorf("Search(%q) after the migration = %v, want %v as appended", q, got, want)
		}
	}
}

// TestMigrate_DamagedEvent: migration 8 leaves out an event whose stored
// envelope fails its checksum, and indexes the others.
func TestMigrate_DamagedEvent(t *testing.T) {
	sessions := []oldSession{{cairn.DefaultNamespace, "e", storetest.UserTurn(0, "r1", "brokenword")}}
	old := openOld(t, oldFile(t, sessions, `UPDATE events SET envelope = replace(envelope, 'brokenword', 'brokenwork')
		WHERE session_id = 'e' AND seq = 2`))
	if hits, err := old.Search(t.Context(), "brokenword brokenwork", 10); err != nil || len(hits) != 1 || hits[0].Seq != 3 {
		t.Errorf("Search of the damaged event's words = %v, %v; want seq 3 of e only (its response)", hits, err)
	}
}

// TestMigrate_ManyEvents: migration 8 indexes more events than it reads
// at once, the first and the last among them.
func TestMigrate_ManyEvents(t *testing.T) {
	var sessions []oldSession
	for i := range indexBatch/4 + 10 {
		sessions = append(sessions, oldSession{cairn.DefaultNamespace, fmt.Sprintf("s%04d", i),
			storetest.UserTurn(0, "r1", fmt.Sprintf("turn%d", i))})
	}
	old := openOld(t, oldFile(t, sessions, ""))
	for _, o := range []oldSession{sessions[0], sessions[len(sessions)-1]} {
		word := o.events[1].SearchText()
		if hits, err := old.Search(t.Context(), word, 10); err != nil || len(hits) != 1 || hits[0].ID != o.id {
			t.Errorf("Search(%q) = %v, %v; want session %s", word, hits, err, o.id)
		}
	}
}

// TestSearch_DeletedEventRow: an event row deleted from outside, on a
// connection that does not enforce foreign keys, takes its text out of
// the index (a trigger), besides marking the session damaged.
func TestSearch_DeletedEventRow(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "cairn.db"), Options{})
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(t.Context(), "a", 0, storetest.UserTurn(0, "r1", "quokkafish")...); err != nil {
		t.Fatal(err)
	}
	if err := DeleteEvent(t.Context(), s, "a", 2); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(t.Context(), "quokkafish", 10)
	if err != nil || len(hits) != 1 || hits[0].Seq != 3 {
		t.Errorf("Search after seq 2's row was deleted = %v, %v; want seq 3 only", hits, err)
	}
	if err := CheckSearchIndex(t.Context(), s); err != nil {
		t.Errorf("integrity of the search index: %v", err)
	}
}

// TestSearch_AppendFenced: a fenced append indexes its events as Append
// does, and a retried one nothing twice.
func TestSearch_AppendFenced(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), "cairn.db"), Options{})
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	lease, err := s.Acquire(t.Context(), "a", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.AppendFenced(t.Context(), "a", lease, 0, storetest.UserTurn(0, "r1", "quokkafish")...); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := s.Search(t.Context(), "quokkafish", 10)
	if err != nil || len(hits) != 1 || hits[0].ID != "a" || hits[0].Seq != 2 {
		t.Errorf("Search after a fenced append = %v, %v; want a at seq 2", hits, err)
	}
	var n int
	if err := s.w.QueryRowContext(t.Context(), `SELECT count(*) FROM search_texts`).Scan(&n); err != nil || n != 2 {
		t.Errorf("texts indexed: %d, %v; want 2 (the message and the response)", n, err)
	}
	if err := CheckSearchIndex(t.Context(), s); err != nil {
		t.Errorf("integrity of the search index: %v", err)
	}
}

// TestSearch_ManyMatches: a word in many more events than Search ranks
// at first (1,200 where it ranks 56, then 224, 896 and 3,584), the best of
// them in another namespace or expired, still gives the live sessions of
// the namespace, best first.
func TestSearch_ManyMatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cairn.db")
	clock := storetest.NewClock()
	open := func(opts cairn.StoreOptions) *Store {
		opts.Now = clock.Now
		return openTest(t, path, Options{StoreOptions: opts, Synchronous: "NORMAL"})
	}
	s, crowd, short := open(cairn.StoreOptions{}), open(cairn.StoreOptions{Namespace: "crowd"}), open(cairn.StoreOptions{TTL: time.Hour})
	appendTurn := func(s *Store, id, text string) {
		t.Helper()
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(t.Context(), id, 0, storetest.UserTurn(0, "r1", text)...); err != nil {
			t.Fatal(err)
		}
	}
	// The crowd's and the expired sessions hold the word more often,
	// so that they rank first.
	for i := range 300 {
		appendTurn(crowd, "c"+strconv.Itoa(i), "wombat wombat wombat")
		appendTurn(short, "x"+strconv.Itoa(i), "wombat wombat wombat")
	}
	appendTurn(s, "one", "a wombat")
	appendTurn(s, "two", "a wombat, a wombat")
	clock.Advance(2 * time.Hour)
	hits, err := s.Search(t.Context(), "wombat", 10)
	if err != nil || len(hits) != 2 || hits[0].ID != "two" || hits[1].ID != "one" || hits[0].Seq != 2 || hits[1].Seq != 2 {
		t.Errorf("Search = %v, %v; want two then one, each at seq 2", hits, err)
	}
	if hits, err := crowd.Search(t.Context(), "wombat", 1000); err != nil || len(hits) != 300 {
		t.Errorf("Search of the crowd found %d sessions, %v; want 300", len(hits), err)
	}
}

// pendingTexts counts the texts appended and not yet in the search index.
func pendingTexts(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.w.QueryRowContext(t.Context(), `SELECT count(*) FROM search_texts WHERE id > (SELECT indexed FROM search_state)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSearch_Pending: Append leaves its texts pending; a search in
// another store on the file indexes them first and finds them; a session
// erased while its texts are pending leaves the index whole; and a store
// that has appended indexEvery texts indexes them without a search. Its
// texts come after every text was deleted, the last indexed one too: their
// ids must not fall below the index's mark, where they would count as
// indexed.
func TestSearch_Pending(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cairn.db")
	writer, reader := openTest(t, path, Options{}), openTest(t, path, Options{})
	for _, id := range []string{"kept", "erased"} {
		if err := writer.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := writer.Append(t.Context(), id, 0, storetest.UserTurn(0, "r1", "numbat "+id)...); err != nil {
			t.Fatal(err)
		}
	}
	if n := pendingTexts(t, writer); n != 4 {
		t.Fatalf("pending texts after two turns: %d, want 4 (a message and a response each)", n)
	}
	if err := writer.Delete(t.Context(), "erased"); err != nil {
		t.Fatal(err)
	}
	hits, err := reader.Search(t.Context(), "numbat", 10)
	if err != nil || len(hits) != 1 || hits[0].ID != "kept" || hits[0].Seq != 2 {
		t.Fatalf("Search in another store = %v, %v; want kept at seq 2", hits, err)
	}
	if n := pendingTexts(t, writer); n != 0 {
		t.Errorf("pending texts after a search: %d, want 0", n)
	}
	if err := writer.Delete(t.Context(), "kept"); err != nil { // indexed now: its tokens leave the index
		t.Fatal(err)
	}
	if hits, err := reader.Search(t.Context(), "numbat", 10); err != nil || len(hits) != 0 {
		t.Errorf("Search after both sessions were deleted = %v, %v; want none", hits, err)
	}
	if err := CheckSearchIndex(t.Context(), writer); err != nil {
		t.Errorf("integrity of the search index: %v", err)
	}

	counting := openTest(t, path, Options{}) // a store whose count starts at 0
	if err := counting.Create(t.Context(), cairn.SessionMeta{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	for i := range indexEvery - 1 {
		if err := counting.Append(t.Context(), "long", int64(i), storetest.UserTurn(int64(i)-1, "r1", "dingo")[1]); err != nil {
			t.Fatal(err)
		}
	}
	if n := pendingTexts(t, counting); n != indexEvery-1 {
		t.Fatalf("pending texts after %d appends: %d", indexEvery-1, n)
	}
	if err := counting.Append(t.Context(), "long", indexEvery-1, storetest.UserTurn(indexEvery-2, "r1", "dingo")[1]); err != nil {
		t.Fatal(err)
	}
	if n := pendingTexts(t, counting); n != 0 {
		t.Errorf("pending texts after %d appends: %d, want 0", indexEvery, n)
	}
	if err := CheckSearchIndex(t.Context(), counting); err != nil {
		t.Errorf("integrity of the search index: %v", err)
	}
}
