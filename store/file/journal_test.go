//go:build linux || darwin

package file

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/store/storetest"
)

// crash leaves the store as a crash of its process or machine would: its
// journal keeps its records (no checkpoint, nothing marked clean), and
// every lock it held is released.
func crash(t *testing.T, s *Store) {
	t.Helper()
	s.ops.Lock()
	defer s.ops.Unlock()
	s.closed = true
	if s.journal.ckpt != nil {
		<-s.journal.ckpt // a checkpoint under way is left to finish
	}
	if s.journal.f != nil {
		s.journal.f.Close()
		s.journal.locks.close()
		s.journal.f, s.journal.locks = nil, halfLocks{}
	}
	s.closeFiles()
}

// smallJournals makes the journals the test creates hold only n bytes.
func smallJournals(t *testing.T, n int64) {
	old := newJournalSize
	newJournalSize = n
	t.Cleanup(func() { newJournalSize = old })
}

func openJournaled(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(t.Context(), dir, cairn.StoreOptions{Namespace: "tests"})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func nsPath(dir string, parts ...string) string {
	return filepath.Join(append([]string{dir, "tests"}, parts...)...)
}

// journalFiles returns the paths of the journal files in a namespace
// folder (not its lock, nor the folder of the half locks' files).
func journalFiles(t *testing.T, nsDir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(nsDir, journalDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if b := filepath.Base(n); b != journalLockName && b != halfLockDir {
			out = append(out, n)
		}
	}
	return out
}

// journalsHolding returns the journal files of a namespace folder that
// contain s.
func journalsHolding(t *testing.T, nsDir, s string) []string {
	t.Helper()
	var out []string
	for _, p := range journalFiles(t, nsDir) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(s)) {
			out = append(out, filepath.Base(p))
		}
	}
	return out
}

// journalRecords returns the append records of every journal file of a
// namespace folder, by session.
func journalRecords(t *testing.T, nsDir string) map[string][]record {
	t.Helper()
	out := map[string][]record{}
	for _, p := range journalFiles(t, nsDir) {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		recs, _, err := readRecords(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			out[r.id] = append(out[r.id], r)
		}
	}
	return out
}

func truncateLog(t *testing.T, dir, id string, size int64) {
	t.Helper()
	if err := os.Truncate(nsPath(dir, id, logName), size); err != nil {
		t.Fatal(err)
	}
}

// appendN appends n one-event appends to a new session id. It may run
// in a goroutine of its own: it reports with t.Error.
func appendN(t *testing.T, s *Store, id string, n int) { appendPadded(t, s, id, n, "") }

// appendPadded is appendN with pad in every event.
func appendPadded(t *testing.T, s *Store, id string, n int, pad string) {
	t.Helper()
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Error(err)
		return
	}
	for seq := int64(1); seq <= int64(n); seq++ {
		if err := s.Append(t.Context(), id, seq-1, payload(id, seq, pad)); err != nil {
			t.Errorf("Append(%s, %d): %v", id, seq, err)
			return
		}
	}
}

// payload is the event numbered seq of session id, which checkEvents
// knows again.
func payload(id string, seq int64, pad string) cairn.Event {
	return storetest.Custom(seq, fmt.Sprintf("%s-%d;%s", id, seq, pad))
}

// checkCustom checks that session id holds the n events of appendN.
func checkCustom(t *testing.T, s *Store, id string, n int) {
	t.Helper()
	rec, err := s.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatalf("Load(%s): %v", id, err)
	}
	if len(rec.Events) != n || rec.Info.LastSeq != int64(n) {
		t.Fatalf("%s: %d events, last seq %d; want %d", id, len(rec.Events), rec.Info.LastSeq, n)
	}
	checkEvents(t, id, rec.Events)
}

// checkEvents checks that events are those payload made for id, from 1.
func checkEvents(t *testing.T, id string, events []cairn.Event) {
	t.Helper()
	for i, e := range events {
		if want := fmt.Sprintf(`"%s-%d;`, id, i+1); e.Seq != int64(i+1) || !strings.Contains(string(e.Data), want) {
			t.Fatalf("%s: event %d is seq %d %.60s, want seq %d with %s", id, i, e.Seq, e.Data, i+1, want)
		}
	}
}

// TestJournal_MachineCrash appends to sessions, crashes, and takes from
// the logs what a crash of the machine could (the lines no fsync of the
// log covered, down to a torn line): the next Open puts back every
// acknowledged append from the journal.
func TestJournal_MachineCrash(t *testing.T) {
	dir := t.TempDir()
	s := openJournaled(t, dir)
	cuts := map[string]func(size int64) int64{
		"empty":   func(int64) int64 { return 0 },
		"torn":    func(size int64) int64 { return size - 7 },
		"half":    func(size int64) int64 { return size / 2 },
		"intact":  func(size int64) int64 { return size },
		"onebyte": func(int64) int64 { return 1 },
	}
	for id := range cuts {
		appendN(t, s, id, 20)
	}
	crash(t, s)
	for id, cut := range cuts {
		fi, err := os.Stat(nsPath(dir, id, logName))
		if err != nil {
			t.Fatal(err)
		}
		truncateLog(t, dir, id, cut(fi.Size()))
	}
	s2 := openJournaled(t, dir)
	for id := range cuts {
		checkCustom(t, s2, id, 20)
	}
	if n := len(journalRecords(t, nsPath(dir))); n != 0 {
		t.Errorf("after the replay the journals still hold records of %d sessions", n)
	}
	// The sessions go on where they were.
	if err := s2.Append(t.Context(), "empty", 20, payload("empty", 21, "")); err != nil {
		t.Fatal(err)
	}
	checkCustom(t, s2, "empty", 21)
}

// TestJournal_TornRecord loses the last fdatasync to the crash: its
// append was never acknowledged, and only the appends before it come
// back. A damaged record in the middle (a void torn by the crash) is
// passed over, and the records after it still count.
func TestJournal_TornRecord(t *testing.T) {
	dir := t.TempDir()
	s := openJournaled(t, dir)
	appendN(t, s, "a", 5)
	appendN(t, s, "b", 5)
	crash(t, s)
	files := journalFiles(t, nsPath(dir))
	if len(files) != 1 {
		t.Fatalf("journal files %v, want one", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := scanJournal(b)
	if len(entries) != 10 {
		t.Fatalf("%d records, want 10", len(entries))
	}
	b[entries[1].end-1] ^= 0xff // a's second append: damaged
	b[entries[9].end-1] ^= 0xff // b's fifth: torn
	if err := os.WriteFile(files[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	truncateLog(t, dir, "b", 0)
	// b's info.json and ack.json, written after each append without an
	// fsync, covered the fifth append, whose Append never returned in this
	// crash: the crash tears them too.
	if err := os.WriteFile(nsPath(dir, "b", infoName), []byte(`{"crc32c":1,"in`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nsPath(dir, "b", ackName), []byte(`{"crc32c":1,"ack":{"log_si`), 0o600); err != nil {
		t.Fatal(err)
	}
	s2 := openJournaled(t, dir)
	checkCustom(t, s2, "a", 5) // its log was whole
	checkCustom(t, s2, "b", 4)
}

// TestJournal_Checkpoints fills small journals many times over, so that
// appends run through checkpoints (a half full, appends going on in the
// other while the logs are fsynced and the full half zeroed); after a
// crash the logs lose everything after their last checkpoint, and the
// replay brings it back.
func TestJournal_Checkpoints(t *testing.T) {
	smallJournals(t, minJournalSize)
	dir := t.TempDir()
	s := openJournaled(t, dir)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() { appendN(t, s, fmt.Sprintf("s%d", i), 300) })
	}
	wg.Wait()
	crash(t, s)
	recs := journalRecords(t, nsPath(dir))
	if len(recs) == 0 {
		t.Fatal("the journal holds no records")
	}
	for id, rs := range recs {
		first := rs[0].off
		for _, r := range rs {
			first = min(first, r.off)
		}
		if first == 0 {
			t.Errorf("%s: the journal holds its first append: no checkpoint ran", id)
		}
		truncateLog(t, dir, id, first) // what the last checkpoint fsynced
	}
	s2 := openJournaled(t, dir)
	for i := range 4 {
		checkCustom(t, s2, fmt.Sprintf("s%d", i), 300)
	}
}

// TestJournal_GroupCommit has eight sessions append at once: the appends
// share the journal's writes, and each is durable when it returns, so a
// crash right after, with the logs emptied, loses none.
func TestJournal_GroupCommit(t *testing.T) {
	dir := t.TempDir()
	s := openJournaled(t, dir)
	const writers, n = 8, 40
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() { appendN(t, s, fmt.Sprintf("w%d", i), n) })
	}
	wg.Wait()
	if f := s.journal.flushes; f >= writers*n {
		t.Errorf("%d appends took %d journal writes: none were shared", writers*n, f)
	} else {
		t.Logf("%d appends, %d journal writes", writers*n, f)
	}
	recs := journalRecords(t, nsPath(dir))
	total := 0
	for _, rs := range recs {
		total += len(rs)
	}
	if total != writers*n {
		t.Fatalf("the journal holds %d records, want %d", total, writers*n)
	}
	crash(t, s)
	for i := range writers {
		truncateLog(t, dir, fmt.Sprintf("w%d", i), 0)
	}
	s2 := openJournaled(t, dir)
	for i := range writers {
		checkCustom(t, s2, fmt.Sprintf("w%d", i), n)
	}
}

// TestJournal_OtherSession checks that a replay never writes into a
// session that was deleted, or deleted and made again under the same ID,
// after the journal took its appends.
func TestJournal_OtherSession(t *testing.T) {
	dir := t.TempDir()
	s := openJournaled(t, dir)
	appendN(t, s, "again", 3)
	appendN(t, s, "gone", 3)
	crash(t, s)
	// A session made again has another token in its lock file.
	if err := os.WriteFile(nsPath(dir, "again", lockName), newToken(), 0o600); err != nil {
		t.Fatal(err)
	}
	truncateLog(t, dir, "again", 0)
	if err := os.RemoveAll(nsPath(dir, "gone")); err != nil {
		t.Fatal(err)
	}
	s2 := openJournaled(t, dir)
	if b := readFile(t, nsPath(dir, "again", logName)); len(b) != 0 {
		t.Errorf("the replay wrote %d bytes into another session of the ID", len(b))
	}
	if _, err := s2.Load(t.Context(), "gone", 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Load(gone) = %v, want ErrNotFound", err)
	}
}

// TestJournal_DeleteScrubs deletes, from a second store on the folder, a
// session the first store journaled: the live store's journal no longer
// holds its events, the first store goes on appending to others, and a
// crash after that replays the others.
func TestJournal_DeleteScrubs(t *testing.T) {
	dir := t.TempDir()
	a := openJournaled(t, dir)
	b := openJournaled(t, dir)
	marker := "secret-" + string(newToken())
	if err := a.Create(t.Context(), cairn.SessionMeta{ID: "erased"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(t.Context(), "erased", 0, storetest.Custom(1, marker)); err != nil {
		t.Fatal(err)
	}
	appendN(t, a, "kept", 3)
	appendN(t, b, "other", 2)
	if got := journalsHolding(t, nsPath(dir), marker); len(got) != 1 {
		t.Fatalf("before Delete the marker is in %v, want one journal", got)
	}
	if err := b.Delete(t.Context(), "erased"); err != nil {
		t.Fatal(err)
	}
	if got := journalsHolding(t, nsPath(dir), marker); len(got) > 0 {
		t.Errorf("after Delete the marker is still in %v", got)
	}
	if got := journalsHolding(t, nsPath(dir), "erased"); len(got) > 0 {
		t.Errorf("after Delete the session's ID is still in %v", got)
	}
	if err := a.Append(t.Context(), "kept", 3, payload("kept", 4, "")); err != nil {
		t.Fatal(err)
	}
	crash(t, a)
	crash(t, b)
	truncateLog(t, dir, "kept", 0)
	truncateLog(t, dir, "other", 0)
	c := openJournaled(t, dir)
	checkCustom(t, c, "kept", 4)
	checkCustom(t, c, "other", 2)
}

// TestJournal_CloseIsClean closes a store: the logs are fsynced and the
// journal holds nothing, so the next store takes the same file.
func TestJournal_CloseIsClean(t *testing.T) {
	dir := t.TempDir()
	s := openJournaled(t, dir)
	appendN(t, s, "x", 3)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files := journalFiles(t, nsPath(dir))
	if len(files) != 1 {
		t.Fatalf("journal files %v, want one", files)
	}
	b := readFile(t, files[0])
	if i := slices.IndexFunc(b, func(c byte) bool { return c != 0 }); i >= 0 {
		t.Errorf("a closed journal has a byte that is not zero at %d", i)
	}
	s2 := openJournaled(t, dir)
	if err := s2.Append(t.Context(), "x", 3, payload("x", 4, "")); err != nil {
		t.Fatal(err)
	}
	if got := journalFiles(t, nsPath(dir)); len(got) != 1 || got[0] != files[0] {
		t.Errorf("journal files %v, want %v reused", got, files)
	}
	checkCustom(t, s2, "x", 4)
}

// TestJournal_SessionWithoutToken is a session made by an earlier version
// of the store, whose lock file is empty: its first append gives it a
// token, and a crash after that is replayed.
func TestJournal_SessionWithoutToken(t *testing.T) {
	dir := t.TempDir()
	s := openJournaled(t, dir)
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "old"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.WriteFile(nsPath(dir, "old", lockName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s = openJournaled(t, dir)
	for seq := int64(1); seq <= 3; seq++ {
		if err := s.Append(t.Context(), "old", seq-1, payload("old", seq, "")); err != nil {
			t.Fatal(err)
		}
	}
	if tok := readFile(t, nsPath(dir, "old", lockName)); len(tok) != tokenLen {
		t.Errorf("lock file holds %q, want a token", tok)
	}
	crash(t, s)
	truncateLog(t, dir, "old", 0)
	checkCustom(t, openJournaled(t, dir), "old", 3)
}

// TestJournal_Damaged checks what Open says of journals it cannot use.
func TestJournal_Damaged(t *testing.T) {
	t.Run("not a journal", func(t *testing.T) {
		dir := t.TempDir()
		s := openJournaled(t, dir)
		appendN(t, s, "x", 1)
		s.Close()
		bad := nsPath(dir, journalDir, "junk")
		if err := os.WriteFile(bad, []byte("hello"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(t.Context(), dir, cairn.StoreOptions{Namespace: "tests"})
		if err == nil || !strings.Contains(err.Error(), "journal junk") || !strings.Contains(err.Error(), "not a journal") {
			t.Fatalf("Open = %v, want an error naming journal junk", err)
		}
	})
	t.Run("log lost acknowledged events", func(t *testing.T) {
		smallJournals(t, minJournalSize)
		dir := t.TempDir()
		s := openJournaled(t, dir)
		appendN(t, s, "x", 600)
		appendN(t, s, "y", 3)
		for seq := int64(601); seq <= 603; seq++ { // in the journal's last half
			if err := s.Append(t.Context(), "x", seq-1, payload("x", seq, "")); err != nil {
				t.Fatal(err)
			}
		}
		crash(t, s)
		recs := journalRecords(t, nsPath(dir))
		if len(recs["x"]) == 0 || recs["x"][0].off == 0 || len(recs["y"]) == 0 {
			t.Fatal("no checkpoint ran, or none of y's appends is in the journal")
		}
		truncateLog(t, dir, "x", 0)                // more than a crash can take
		truncateLog(t, dir, "y", recs["y"][0].off) // what a crash can take
		for _, id := range []string{"x", "y"} {
			if err := os.Remove(nsPath(dir, id, infoName)); err != nil {
				t.Fatal(err)
			}
		}
		before := readFile(t, nsPath(dir, "x", logName))

		// The store opens; x is damaged, y is replayed.
		s2 := openJournaled(t, dir)
		checkCustom(t, s2, "y", 3)
		_, err := s2.Load(t.Context(), "x", 0)
		if d, ok := errors.AsType[*driver.DamagedError](err); !ok || d.Session != "x" || !strings.Contains(err.Error(), "lost events") {
			t.Fatalf("Load(x) = %v, want x damaged, its log having lost events", err)
		}
		if err := s2.Append(t.Context(), "x", 0, payload("x", 1, "")); !errors.Is(err, cairn.ErrDamaged) {
			t.Errorf("Append(x) = %v, want ErrDamaged", err)
		}
		page, err := s2.List(t.Context(), cairn.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]cairn.Status{}
		for _, info := range page.Sessions {
			listed[info.ID] = info.Status
		}
		if len(listed) != 2 || listed["x"] != cairn.StatusDamaged || listed["y"] == cairn.StatusDamaged {
			t.Errorf("List = %v, want x damaged and y not", listed)
		}
		if got := readFile(t, nsPath(dir, "x", logName)); !bytes.Equal(got, before) {
			t.Error("x's log was written to")
		}
		// The journal keeps x's appends, and nothing of y's.
		recs = journalRecords(t, nsPath(dir))
		if len(recs["x"]) == 0 || len(recs["y"]) != 0 {
			t.Errorf("after the replay the journals hold %d appends of x and %d of y, want some and none", len(recs["x"]), len(recs["y"]))
		}
		rep, err := s2.Check(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var xBad, kept bool
		for _, p := range rep.Problems {
			xBad = xBad || p.Session == "x" && p.Damage
			kept = kept || strings.HasPrefix(p.Where, journalDir+"/") && strings.Contains(p.Msg, "x")
			if strings.Contains(p.Fix, "remove") && strings.Contains(p.Fix, journalDir) {
				t.Errorf("Check's fix %q removes the journal folder", p.Fix)
			}
		}
		if !xBad || !kept || rep.Sessions != 2 {
			t.Errorf("Check = %+v, want x damaged and a journal kept for it, of 2 sessions", rep)
		}
		// Another store opening finds x damaged again.
		s2.Close()
		s3 := openJournaled(t, dir)
		if _, err := s3.Load(t.Context(), "x", 0); !errors.Is(err, cairn.ErrDamaged) {
			t.Errorf("Load(x) in a store opened after = %v, want ErrDamaged", err)
		}
		checkCustom(t, s3, "y", 3)
		// Deleting x voids its appends; the next Open empties the journal.
		if err := s3.Delete(t.Context(), "x"); err != nil {
			t.Fatalf("Delete(x): %v", err)
		}
		s3.Close()
		openJournaled(t, dir)
		if recs := journalRecords(t, nsPath(dir)); len(recs) != 0 {
			t.Errorf("after x was deleted the journals hold appends of %d sessions", len(recs))
		}
	})
}

// TestJournal_LargeAppend is an append too large for the journal: its log
// is fsynced instead, and it survives the crash without the journal.
func TestJournal_LargeAppend(t *testing.T) {
	smallJournals(t, minJournalSize)
	dir := t.TempDir()
	s := openJournaled(t, dir)
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "big"}); err != nil {
		t.Fatal(err)
	}
	big := storetest.Custom(1, strings.Repeat("z", minJournalSize/2))
	if err := s.Append(t.Context(), "big", 0, big); err != nil {
		t.Fatal(err)
	}
	if recs := journalRecords(t, nsPath(dir)); len(recs["big"]) != 0 {
		t.Errorf("the journal took an append of %d bytes", len(big.Data))
	}
	crash(t, s)
	rec, err := openJournaled(t, dir).Load(t.Context(), "big", 0)
	if err != nil || len(rec.Events) != 1 {
		t.Fatalf("Load = %v, %v", rec, err)
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestJournal_LongJournal fills a journal past the first piece that a
// replay reads (256 KiB), with a record across that boundary.
func TestJournal_LongJournal(t *testing.T) {
	dir := t.TempDir()
	s := openJournaled(t, dir)
	const n = 400
	appendPadded(t, s, "long", n, strings.Repeat("p", 1000))
	crash(t, s)
	files := journalFiles(t, nsPath(dir))
	b := readFile(t, files[0])
	if _, end := scanJournal(b); end < 300<<10 {
		t.Fatalf("the records end at %d bytes, want past 300 KiB", end)
	}
	truncateLog(t, dir, "long", 0)
	checkCustom(t, openJournaled(t, dir), "long", n)
}

const journalChildEnv = "CAIRN_FILE_TEST_JOURNAL_CHILD"

// TestJournal_KilledWriters has a child process append to four sessions
// at once, saying each acknowledged append, until it is killed with
// SIGKILL. The logs are then emptied, as if the machine had gone down
// with it: the next Open brings back every append the child was told was
// durable.
func TestJournal_KilledWriters(t *testing.T) {
	if dir := os.Getenv(journalChildEnv); dir != "" {
		journalChild(t, dir)
		return
	}
	dir := t.TempDir()
	child, out := startChild(t, "TestJournal_KilledWriters", journalChildEnv, dir)
	acked := map[string]int{}
	lines := bufio.NewScanner(out)
	for n := 0; n < 200 && lines.Scan(); n++ {
		var id string
		var seq int
		if _, err := fmt.Sscanf(lines.Text(), "%s %d", &id, &seq); err != nil {
			t.Fatalf("child said %q", lines.Text())
		}
		acked[id] = max(acked[id], seq)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	if len(acked) != 4 {
		t.Fatalf("the child acknowledged appends to %d sessions, want 4", len(acked))
	}
	for id := range acked {
		truncateLog(t, dir, id, 0)
	}
	s := openJournaled(t, dir)
	for id, seq := range acked {
		rec, err := s.Load(t.Context(), id, 0)
		if err != nil {
			t.Fatalf("Load(%s): %v", id, err)
		}
		if rec.Info.LastSeq < int64(seq) {
			t.Errorf("%s: last seq %d, but the child was told %d was durable", id, rec.Info.LastSeq, seq)
		}
		checkEvents(t, id, rec.Events)
	}
}

// journalChild is the child's side: append until killed.
func journalChild(t *testing.T, dir string) {
	s, err := Open(t.Context(), dir, cairn.StoreOptions{Namespace: "tests"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 4 {
		id := fmt.Sprintf("k%d", i)
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for seq := int64(1); ; seq++ {
				if err := s.Append(t.Context(), id, seq-1, payload(id, seq, "")); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "%s %d\n", id, seq)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// TestJournal_FullBatch has more appends waiting at once than half a
// journal holds: the leader writes what fits and leaves the rest to fsync
// their logs, and the journal stays whole.
func TestJournal_FullBatch(t *testing.T) {
	smallJournals(t, minJournalSize)
	dir := t.TempDir()
	s := openJournaled(t, dir)
	pad := strings.Repeat("b", minJournalSize/8-600) // each record just fits
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { appendPadded(t, s, fmt.Sprintf("b%d", i), 30, pad) })
	}
	wg.Wait()
	if s.journal.flushes == 0 {
		t.Fatal("the journal took none of the appends")
	}
	crash(t, s)
	if fi, err := os.Stat(journalFiles(t, nsPath(dir))[0]); err != nil || fi.Size() != minJournalSize {
		t.Fatalf("journal size %v (%v), want %d", fi.Size(), err, minJournalSize)
	}
	s2 := openJournaled(t, dir)
	for i := range 8 {
		checkCustom(t, s2, fmt.Sprintf("b%d", i), 30)
	}
}

// FuzzScanJournal feeds the journal's reader bytes a crash or a disk could
// leave: it never reads past them, every record it returns lies inside
// them, and records written by appendRecord come back as written.
func FuzzScanJournal(f *testing.F) {
	f.Add([]byte{}, []byte("x"), uint8(0))
	f.Add(appendRecord(nil, 7, recAppend, "s1", "tok", 10, []byte("line\n")), []byte("data"), uint8(3))
	f.Add(bytes.Repeat([]byte(journalMagic), 20), []byte{}, uint8(40))
	f.Fuzz(func(t *testing.T, junk, data []byte, cut uint8) {
		for _, buf := range [][]byte{junk, append(appendRecord(nil, 1, recAppend, "a", "t", 0, data), junk...)} {
			entries, end := scanJournal(buf)
			if end < 0 || end > len(buf) {
				t.Fatalf("end %d outside %d bytes", end, len(buf))
			}
			for _, e := range entries {
				if e.pos < 0 || e.end > end || e.pos >= e.end {
					t.Fatalf("entry %d–%d outside the %d bytes scanned", e.pos, e.end, end)
				}
			}
			_ = cutShort(buf, end)
		}
		// Whole records come back; one cut short is not a record.
		first := appendRecord(nil, 9, recAppend, "a", "t", 5, data)
		whole := appendRecord(bytes.Clone(first), 9, recAppend, "b", "u", 6, junk)
		entries, _ := scanJournal(whole)
		if len(entries) != 2 || entries[0].id != "a" || !bytes.Equal(entries[0].data, data) ||
			entries[1].id != "b" || entries[1].off != 6 || !bytes.Equal(entries[1].data, junk) {
			t.Fatalf("round trip: %+v", entries)
		}
		if n := int(cut) % (len(whole) - len(first)); n > 0 {
			short := whole[:len(whole)-n]
			if entries, _ := scanJournal(short); len(entries) != 1 {
				t.Fatalf("%d bytes cut off the second record: %d entries", n, len(entries))
			}
		}
	})
}

// TestJournal_ReplayAcrossRecreate: a replay of a dead store's journal
// waits for the lock of a session that a Delete holds; the Delete moves the
// folder away, and the session is created again before the replay has the
// lock. The replay read its token from the deleted session's lock file, so
// it must not write the deleted session's appends into the log now at the
// session's path, the new session's.
func TestJournal_ReplayAcrossRecreate(t *testing.T) {
	dir := t.TempDir()
	other := openJournaled(t, dir)
	dead := openJournaled(t, dir)
	appendN(t, dead, "a", 2)
	crash(t, dead)

	// Hold the session's lock, as a Delete does while it moves the folder.
	lockPath := nsPath(dir, "a", lockName)
	held, err := os.OpenFile(lockPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	opened := make(chan *Store, 1)
	go func() {
		s, err := Open(context.Background(), dir, cairn.StoreOptions{Namespace: "tests"})
		if err != nil {
			t.Errorf("Open: %v", err)
		}
		opened <- s
	}()
	// The replay has opened the lock file when a second descriptor of
	// this process names it; it then waits for the lock.
	for deadline := time.Now().Add(30 * time.Second); fdsNaming(t, lockPath) < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the replay never opened the session's lock file")
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.Rename(nsPath(dir, "a"), nsPath(dir, ".trash-a")); err != nil {
		t.Fatal(err)
	}
	if err := other.Create(t.Context(), cairn.SessionMeta{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	s := <-opened
	if s == nil {
		return
	}
	defer s.Close()
	if b := readFile(t, nsPath(dir, "a", logName)); len(b) != 0 {
		t.Errorf("the replay wrote %d bytes of the deleted session into the log of the one created again", len(b))
	}
	rec, err := s.Load(t.Context(), "a", 0)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(rec.Events) != 0 {
		t.Errorf("the session created again holds %d events of the deleted one", len(rec.Events))
	}
}

// fdsNaming counts this process's open descriptors of the file at p:
// those /dev/fd lists (Linux and macOS both have it) whose device and
// inode are p's.
func fdsNaming(t *testing.T, p string) int {
	t.Helper()
	var want unix.Stat_t
	if err := unix.Stat(p, &want); err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/dev/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range fds {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino {
			n++
		}
	}
	return n
}

// TestJournal_HalfLocks checks the write locks of a journal's halves for
// what the journal relies on, with whichever kind this system has
// (journal_ofd.go, journal_flock.go): a lock belongs to the open file it
// was taken through. Another open of the journal, in the same process,
// cannot take a half that one open holds, but takes the other half, and
// is not kept out by the owner's flock on the journal; closing an open
// releases its own locks and no others'.
func TestJournal_HalfLocks(t *testing.T) {
	s := openJournaled(t, t.TempDir())
	if err := s.ns.Mkdir(journalDir, 0o700); err != nil {
		t.Fatal(err)
	}
	f, name, err := s.newJournal() // flocked, as its owner holds it
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	open := func() (*os.File, halfLocks) {
		t.Helper()
		jf, err := s.ns.OpenFile(journalDir+"/"+name, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.openHalfLocks(jf, name)
		if err != nil {
			t.Fatal(err)
		}
		return jf, l
	}
	owner, err := s.openHalfLocks(f, name)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.close()
	bf, b := open()
	defer bf.Close()
	defer b.close()

	if err := owner.lock(0); err != nil {
		t.Fatal(err)
	}
	if tryHalf(t, b, 0) {
		t.Fatal("another open of the journal in this process took half 0 while the owner held it")
	}
	if !tryHalf(t, b, 1) {
		t.Fatal("another open could not take half 1 while the owner held half 0 and its flock on the journal")
	}
	b.unlock(1)
	cf, c := open()
	c.close()
	cf.Close()
	if tryHalf(t, b, 0) {
		t.Fatal("closing a third open of the journal released the owner's lock of half 0")
	}
	owner.unlock(0)
	if !tryHalf(t, b, 0) {
		t.Fatal("another open could not take half 0 once the owner released it")
	}
	if tryHalf(t, owner, 0) {
		t.Fatal("the owner took half 0 while another open held it")
	}
	b.close()
	bf.Close()
	if !tryHalf(t, owner, 0) {
		t.Fatal("closing the open that held half 0 did not release it")
	}
	owner.unlock(0)
}

// tryHalf takes the lock of half i if no other open holds it, and
// reports whether it did.
func tryHalf(t *testing.T, l halfLocks, i int) bool {
	t.Helper()
	ok, err := l.tryLock(i)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}
