package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/provider/script"
)

// snapStore is a store with snapshots: the memory store, which keeps them.
func snapStore(t *testing.T) cairn.Store {
	st := testcheck.MemoryStore(t)
	var s cairn.Store = st
	if _, ok := s.(cairn.Snapshotter); !ok {
		t.Fatal("the memory store does not keep snapshots")
	}
	return st
}

// fullState folds every stored event of the session, ignoring snapshots.
func fullState(t *testing.T, st cairn.Store, id string) []byte {
	t.Helper()
	rec, err := st.Load(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cairn.Fold(rec.Events)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Snapshot()
	return b
}

func TestSnapshots_ResumeFoldsTheTail(t *testing.T) {
	ctx := context.Background()
	st := snapStore(t)
	a := offlineAgent(st)
	a.SnapshotEvents = 10
	s, err := a.Start(ctx, agent.WithID("long"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := s.Run(ctx, fmt.Sprintf("turn %d", i), agent.Continue()); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := st.(cairn.Snapshotter).LoadSnapshot(ctx, "long")
	if err != nil || snap == nil {
		t.Fatalf("snapshot %v, %v; want one", snap, err)
	}
	// Every 10 events, but never before the last snapshot's size has
	// been appended since.
	last := s.State().LastSeq
	rec, _ := st.Load(ctx, "long", snap.Seq+1)
	since := 0
	for _, e := range rec.Events {
		since += e.Size()
	}
	if snap.Seq > last || last-snap.Seq > 10 && since > 2*len(snap.Data)+4096 {
		t.Errorf("snapshot at seq %d (%d bytes), the session ends at %d, %d bytes of events after it: the policy is every 10 events or the snapshot's size", snap.Seq, len(snap.Data), last, since)
	}
	r, err := a.Resume(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Memory().Base(); got != snap.Seq {
		t.Errorf("resumed memory base %d, want the snapshot's seq %d", got, snap.Seq)
	}
	want := fullState(t, st, "long")
	if got, _ := r.State().Snapshot(); !bytes.Equal(got, want) {
		t.Fatalf("state resumed from the snapshot differs from the fold of every event:\n got %s\nwant %s", got, want)
	}
	for i := range 5 {
		if _, err := r.Run(ctx, fmt.Sprintf("after %d", i), agent.Continue()); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := mustSnap(t, r.State()), fullState(t, st, "long"); !bytes.Equal(got, want) {
		t.Fatalf("state after more turns differs from the fold of every event:\n got %s\nwant %s", got, want)
	}
	if _, err := r.Memory().DumpJSON(); err == nil {
		t.Error("a memory from a snapshot dumped as a whole document")
	}
}

func mustSnap(t *testing.T, s *cairn.State) []byte {
	t.Helper()
	b, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSnapshots_Off(t *testing.T) {
	ctx := context.Background()
	st := snapStore(t)
	a := offlineAgent(st)
	a.SnapshotEvents = -1
	s, _ := a.Start(ctx, agent.WithID("nosnap"))
	for i := range 10 {
		if _, err := s.Run(ctx, fmt.Sprintf("turn %d", i), agent.Continue()); err != nil {
			t.Fatal(err)
		}
	}
	if snap, err := st.(cairn.Snapshotter).LoadSnapshot(ctx, "nosnap"); err != nil || snap != nil {
		t.Fatalf("snapshot %v, %v; want none", snap, err)
	}
}

// A session awaiting approval, resumed from a snapshot taken after the
// wait began (no event after it): the decision is taken, the approved
// call runs once, and the run finishes.
func TestSnapshots_ApprovalAcrossASnapshot(t *testing.T) {
	ctx := context.Background()
	st := snapStore(t)
	var runs atomic.Int32
	refund := agent.NewTool("refund", "Refund an order.", func(_ context.Context, in struct {
		Order string `json:"order"`
	}) (string, error) {
		runs.Add(1)
		return "refunded " + in.Order, nil
	}, agent.RequireApproval(), agent.NotIdempotent())
	steps := []script.Step{
		{ToolCalls: []script.Call{{Name: "refund", Arguments: json.RawMessage(`{"order":"123"}`)}}},
		{Text: "The order is refunded."},
	}
	a := &agent.Agent{Model: scripted(t, steps...), Tools: []*agent.Tool{refund}, Store: st, Logger: quietLogger()}
	s, _ := a.Start(ctx, agent.WithID("wait"))
	res, err := s.Run(ctx, "Refund order 123")
	if err != nil || res.Status != cairn.StatusAwaiting {
		t.Fatalf("run: %v, %v", res, err)
	}
	// A snapshot at the last event, as `cairn sessions snapshot` writes.
	rec, err := st.Load(ctx, "wait", 0)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.State().Encode(rec.Events[len(rec.Events)-1])
	if err != nil {
		t.Fatal(err)
	}
	if err := st.(cairn.Snapshotter).PutSnapshot(ctx, "wait", snap); err != nil {
		t.Fatal(err)
	}
	r, err := a.Resume(ctx, "wait")
	if err != nil {
		t.Fatal(err)
	}
	if r.Memory().Base() != r.State().LastSeq || r.Memory().Len() != 0 {
		t.Fatalf("resumed with base %d and %d events, want every event in the snapshot (last seq %d)", r.Memory().Base(), r.Memory().Len(), r.State().LastSeq)
	}
	if err := r.Approve(ctx, res.Awaiting[0].ID, true, "ok"); err != nil {
		t.Fatal(err)
	}
	res, err = r.ResumeRun(ctx)
	if err != nil || res.Status != cairn.StatusCompleted || res.Output != "The order is refunded." {
		t.Fatalf("resume run: %+v, %v", res, err)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the refund ran %d times", n)
	}
	if got, want := mustSnap(t, r.State()), fullState(t, st, "wait"); !bytes.Equal(got, want) {
		t.Fatalf("state differs from the fold of every event:\n got %s\nwant %s", got, want)
	}
}

// snapCounter counts the bytes of the snapshots written through it.
type snapCounter struct {
	cairn.Store
	n     atomic.Int64
	bytes atomic.Int64
}

func (c *snapCounter) PutSnapshot(ctx context.Context, id string, snap cairn.Snapshot) error {
	c.n.Add(1)
	c.bytes.Add(int64(len(snap.Data)))
	return c.Store.(cairn.Snapshotter).PutSnapshot(ctx, id, snap)
}

func (c *snapCounter) LoadSnapshot(ctx context.Context, id string) (*cairn.Snapshot, error) {
	return c.Store.(cairn.Snapshotter).LoadSnapshot(ctx, id)
}

func (c *snapCounter) DropSnapshot(ctx context.Context, id string) error {
	return c.Store.(cairn.Snapshotter).DropSnapshot(ctx, id)
}

// TestSnapshots_ReopenedAgentKeepsThePolicy runs the same conversation in
// one process and with an agent opened anew for every turn, as a server
// or a worker does: the reopened agent writes no more snapshot bytes than
// the one process does (a fifth more at the most), since it knows the
// size of the snapshot it opened from and waits for as many bytes of
// events before writing the next, as the policy says. Without that, it
// wrote the whole state every 10 events, and the snapshots grew with the
// square of the history.
func TestSnapshots_ReopenedAgentKeepsThePolicy(t *testing.T) {
	ctx := t.Context()
	const turns = 120
	long := strings.Repeat("word ", 200) // a kilobyte a turn: the state outgrows the events fast
	run := func(reopen bool) (*snapCounter, int) {
		st := &snapCounter{Store: testcheck.MemoryStore(t)}
		a := offlineAgent(st)
		a.SnapshotEvents = 10
		var s *agent.Session
		for i := range turns {
			if s == nil || reopen {
				var err error
				if s, err = a.Open(ctx, "conv"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Run(ctx, fmt.Sprintf("turn %d %s", i, long), agent.Continue()); err != nil {
				t.Fatal(err)
			}
		}
		size := 0
		for _, e := range loadEvents(t, st, "conv") {
			size += e.Size()
		}
		return st, size
	}
	one, events := run(false)
	reopened, _ := run(true)
	t.Logf("%d events bytes; snapshots: one process %d (%d bytes), reopened %d (%d bytes)",
		events, one.n.Load(), one.bytes.Load(), reopened.n.Load(), reopened.bytes.Load())
	if one.n.Load() == 0 {
		t.Fatal("the one process wrote no snapshot")
	}
	if got, limit := reopened.bytes.Load(), one.bytes.Load()*6/5; got > limit {
		t.Errorf("the reopened agent wrote %d bytes of snapshots, the one process %d: want at most %d", got, one.bytes.Load(), limit)
	}
	if got := reopened.bytes.Load(); got > int64(events) {
		t.Errorf("the reopened agent wrote %d bytes of snapshots for %d bytes of events: want at most as many", got, events)
	}
}
