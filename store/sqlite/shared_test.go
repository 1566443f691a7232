package sqlite_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// appendMany appends n one-event appends to id, from seq from+1 on.
func appendMany(s cairn.Store, t *testing.T, id string, from int64, n int) error {
	for i := range int64(n) {
		if err := s.Append(t.Context(), id, from+i, storetest.Custom(from+i+1, id)); err != nil {
			return fmt.Errorf("append %d to %s: %w", from+i+1, id, err)
		}
	}
	return nil
}

// TestStore_TwoStoresOneFile opens two stores on one file, as two
// processes would, and appends from both at once: to different sessions
// every append succeeds; racing on one session exactly one wins each round.
func TestStore_TwoStoresOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cairn.db")
	s1 := openStore(t, path, cairn.StoreOptions{})
	s2 := openStore(t, path, cairn.StoreOptions{})
	stores := []cairn.Store{s1, s2}
	for _, id := range []string{"one", "two", "race"} {
		if err := s1.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
	}

	const n = 40
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { errs[0] = appendMany(s1, t, "one", 0, n) })
	wg.Go(func() { errs[1] = appendMany(s2, t, "two", 0, n) })
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for _, id := range []string{"one", "two"} {
		for i, s := range stores {
			rec, err := s.Load(t.Context(), id, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Events) != n || rec.Info.LastSeq != n {
				t.Errorf("store %d sees %s with %d events, last seq %d; want %d", i+1, id, len(rec.Events), rec.Info.LastSeq, n)
			}
		}
	}

	const rounds = 20
	var winners []string
	for round := range int64(rounds) {
		won, errs := storetest.Race(2, cairn.ErrConflict, func(i int) (string, error) {
			return strconv.Itoa(i), stores[i].Append(t.Context(), "race", round, storetest.Custom(round+1, strconv.Itoa(i)))
		})
		if len(errs) > 0 {
			t.Fatalf("round %d: %v, want success or ErrConflict", round, errs)
		}
		if len(won) != 1 {
			t.Fatalf("round %d: stores %v won at expected seq %d, want exactly 1", round, won, round)
		}
		winners = append(winners, won[0])
	}
	rec, err := s2.Load(t.Context(), "race", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Events) != rounds {
		t.Fatalf("race session has %d events, want %d", len(rec.Events), rounds)
	}
	for i, e := range rec.Events {
		if tag := customTag(t, e); e.Seq != int64(i+1) || tag != winners[i] {
			t.Errorf("event %d: seq %d by store %s, want seq %d by the round's winner %s", i, e.Seq, tag, i+1, winners[i])
		}
	}
}

func customTag(t *testing.T, e cairn.Event) string {
	t.Helper()
	var c cairn.Custom
	if err := json.Unmarshal(e.Data, &c); err != nil {
		t.Fatal(err)
	}
	var tag string
	if err := json.Unmarshal(c.Payload, &tag); err != nil {
		t.Fatal(err)
	}
	return tag
}

// TestStore_TwoProcesses runs a second process (this test binary again)
// that appends to one session while this one appends to another, on the
// same file: both finish every append, waiting for each other's locks.
func TestStore_TwoProcesses(t *testing.T) {
	const n = 60
	if path := os.Getenv("CAIRN_SQLITE_CHILD_DB"); path != "" {
		s := openStore(t, path, cairn.StoreOptions{})
		if err := appendMany(s, t, "child", 0, n); err != nil {
			t.Fatal(err)
		}
		return
	}
	path := filepath.Join(t.TempDir(), "cairn.db")
	s := openStore(t, path, cairn.StoreOptions{})
	for _, id := range []string{"parent", "child"} {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestStore_TwoProcesses$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CAIRN_SQLITE_CHILD_DB="+path)
	var (
		childOut []byte
		childErr error
		done     = make(chan struct{})
	)
	go func() {
		defer close(done)
		childOut, childErr = cmd.CombinedOutput()
	}()
	// Append until the child has finished, so that the two overlap
	// however long the child takes to start, pausing between appends as
	// an agent does while its model thinks. (SQLite's lock is not fair: a
	// writer that never pauses can starve the other process's.)
	var last int64
	for running := true; running || last < n; last++ {
		select {
		case <-done:
			running = false
		default:
		}
		if err := appendMany(s, t, "parent", last, 1); err != nil {
			t.Error(err)
			<-done
			break
		}
		time.Sleep(time.Millisecond)
	}
	if childErr != nil {
		t.Fatalf("child process: %v\n%s", childErr, childOut)
	}
	for id, want := range map[string]int64{"parent": last, "child": n} {
		rec, err := s.Load(t.Context(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(rec.Events)) != want {
			t.Errorf("%s has %d events, want %d", id, len(rec.Events), want)
		}
	}
}
