package driver_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/store/storetest"
)

func TestGuard(t *testing.T) {
	var g driver.Guard
	evs := storetest.Conversation(0, "r1", "hello")
	for name, err := range map[string]error{
		"Check":   g.Check(),
		"Session": g.Session("s1"),
		"Append":  appendErr(g.Append(cairn.Limits{}, "s1", 0, evs)),
		"Lease":   g.Lease("s1", "worker-1", time.Second),
	} {
		if err != nil {
			t.Errorf("open guard: %s: %v", name, err)
		}
	}
	for name, c := range map[string]struct {
		err  error
		want error
	}{
		"a bad ID":           {g.Session("../s"), cairn.ErrInvalidID},
		"an append of none":  {appendErr(g.Append(cairn.Limits{}, "s1", 0, nil)), cairn.ErrInvalidEvent},
		"a seq out of order": {appendErr(g.Append(cairn.Limits{}, "s1", 3, evs)), cairn.ErrInvalidEvent},
		"an event too large": {appendErr(g.Append(cairn.Limits{MaxEventBytes: 10}, "s1", 0, evs)), cairn.ErrTooLarge},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", name, c.err, c.want)
		}
	}
	if err := g.Lease("s1", "", time.Second); err == nil {
		t.Error("a lease with no holder: accepted")
	}
	if err := g.Lease("s1", "w", 0); err == nil {
		t.Error("a lease with no TTL: accepted")
	}
	if got, err := g.Search("jazz piano-bar", 5); err != nil || fmt.Sprint(got) != "[[jazz] [piano bar]]" {
		t.Errorf("Search = %v, %v; want the phrases [jazz] and [piano bar]", got, err)
	}
	if got, err := g.Search("!!! ...", 5); err != nil || len(got) != 0 {
		t.Errorf("Search of no token = %v, %v; want none", got, err)
	}
	if got, err := g.Search("jazz", 0); err != nil || len(got) != 0 {
		t.Errorf("Search with limit 0 = %v, %v; want none", got, err)
	}

	// Close: exactly one of many racing callers closes it.
	var wg sync.WaitGroup
	var mu sync.Mutex
	closers := 0
	for range 8 {
		wg.Go(func() {
			if g.Close() {
				mu.Lock()
				closers++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if closers != 1 || !g.Closed() {
		t.Fatalf("%d callers closed the guard, Closed() = %v", closers, g.Closed())
	}
	// Closed first: a closed store says so whatever the arguments.
	for name, err := range map[string]error{
		"Check":   g.Check(),
		"Session": g.Session("../bad"),
		"Append":  appendErr(g.Append(cairn.Limits{}, "s1", 0, nil)),
		"Lease":   g.Lease("s1", "", 0),
		"Search":  searchErr(g.Search("jazz", 0)),
	} {
		if !errors.Is(err, cairn.ErrClosed) {
			t.Errorf("closed guard: %s: %v, want ErrClosed", name, err)
		}
	}
}

// A store keeps a Guard and opens each method with it.
func ExampleGuard() {
	var g driver.Guard
	fmt.Println(g.Session("user-1"))
	fmt.Println(g.Session("../etc"))
	g.Close()
	fmt.Println(g.Session("user-1"))
	// Output:
	// <nil>
	// invalid session id: "../etc" has '.' at position 0 (allowed: A-Z a-z 0-9 _ -)
	// store is closed
}

func TestCheckSnapshot(t *testing.T) {
	ok := cairn.Snapshot{Seq: 3, Data: []byte(`{"format":"cairn.snapshot"}`)}
	if err := driver.CheckSnapshot("s1", ok, 0); err != nil {
		t.Errorf("a good snapshot: %v", err)
	}
	if err := driver.CheckSnapshot("s1", cairn.Snapshot{Seq: 1, Data: make([]byte, driver.MaxSnapshotBytes)}, 0); err != nil {
		t.Errorf("a snapshot of MaxSnapshotBytes: %v", err)
	}
	for name, c := range map[string]struct {
		err  error
		want error
	}{
		"a bad ID":         {driver.CheckSnapshot("../s", ok, 0), cairn.ErrInvalidID},
		"seq 0":            {driver.CheckSnapshot("s1", cairn.Snapshot{Data: ok.Data}, 0), cairn.ErrSnapshotInvalid},
		"no data":          {driver.CheckSnapshot("s1", cairn.Snapshot{Seq: 3}, 0), cairn.ErrSnapshotInvalid},
		"past the limit":   {driver.CheckSnapshot("s1", ok, len(ok.Data)-1), cairn.ErrTooLarge},
		"past the default": {driver.CheckSnapshot("s1", cairn.Snapshot{Seq: 1, Data: make([]byte, driver.MaxSnapshotBytes+1)}, 0), cairn.ErrTooLarge},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", name, c.err, c.want)
		}
	}
	if err := driver.CheckSnapshot("s1", ok, len(ok.Data)); err != nil {
		t.Errorf("a snapshot at the limit: %v", err)
	}
	var g driver.Guard
	g.Close()
	if err := g.Snapshot("s1", ok, 0); !errors.Is(err, cairn.ErrClosed) {
		t.Errorf("closed guard: %v, want ErrClosed", err)
	}
}

// appendErr is the error of a Guard.Append.
func appendErr(_ []cairn.Event, err error) error { return err }

func searchErr(_ [][]string, err error) error { return err }

// TestMaxFirstMessage: SessionInfo.Apply keeps MaxFirstMessage bytes of the
// first user message, the length a store (and store/crypt's first-message
// token) must have room for.
func TestMaxFirstMessage(t *testing.T) {
	e := cairn.MustEvent(cairn.KindMessageUser, "r", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: strings.Repeat("x", 3*driver.MaxFirstMessage)}}})
	e.Seq, e.V = 1, cairn.FormatVersion
	var info cairn.SessionInfo
	if err := info.Apply(e); err != nil {
		t.Fatal(err)
	}
	if len(info.FirstMessage) != driver.MaxFirstMessage {
		t.Errorf("the first message kept is %d bytes, want MaxFirstMessage, %d", len(info.FirstMessage), driver.MaxFirstMessage)
	}
}
