package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnhq/cairn"
)

// The snapshot policy's defaults (Agent.SnapshotEvents, SnapshotBytes).
const (
	DefaultSnapshotEvents = 64
	DefaultSnapshotBytes  = 256 << 10
)

// snapshotTimeout bounds one snapshot write.
const snapshotTimeout = 10 * time.Second

// snapshotPolicy is when a session takes a snapshot: after events events
// or bytes bytes of events since the last one, whichever comes first, and
// never before the last snapshot's size has been appended since, so that
// writing snapshots costs at most what the appends cost.
type snapshotPolicy struct {
	events, bytes int
}

func (a *Agent) snapshotPolicy() (snapshotPolicy, bool) {
	return policyOf(a.SnapshotEvents, a.SnapshotBytes)
}

// policyOf is the policy of Agent's SnapshotEvents and SnapshotBytes
// fields, and false for none.
func policyOf(events, bytes int) (snapshotPolicy, bool) {
	p := snapshotPolicy{events, bytes}
	if p.events < 0 || p.bytes < 0 {
		return p, false
	}
	if p.events == 0 {
		p.events = DefaultSnapshotEvents
	}
	if p.bytes == 0 {
		p.bytes = DefaultSnapshotBytes
	}
	return p, true
}

// WriteSnapshot gives session id of store, whose events a caller has just
// written whole (a copy, a fork, an import), the snapshot the agent's
// policy would have written by then: at its last event, when store keeps
// snapshots and the events reach snapshotEvents or snapshotBytes (Agent's
// SnapshotEvents and SnapshotBytes: 0 for the defaults, -1 in either for
// no snapshots), counted from the first. Otherwise the session's next open
// would replay every event, however long it is, until the agent appends
// enough for one of its own. events are the session's as the store holds
// them, or nil to load them. It reports whether it wrote one. A snapshot
// is derived data: the session is whole without it, so a caller reports an
// error as a warning.
func WriteSnapshot(ctx context.Context, store cairn.Store, id string, events []cairn.Event, snapshotEvents, snapshotBytes int) (bool, error) {
	sn, ok := store.(cairn.Snapshotter)
	if !ok {
		return false, nil
	}
	p, ok := policyOf(snapshotEvents, snapshotBytes)
	if !ok {
		return false, nil
	}
	if events == nil {
		rec, err := store.Load(ctx, id, 0)
		if err != nil {
			return false, fmt.Errorf("snapshot %s: %w", id, err)
		}
		events = rec.Events
	}
	size := 0
	for _, e := range events {
		size += e.Size()
	}
	if len(events) == 0 || len(events) < p.events && size < p.bytes {
		return false, nil
	}
	state, err := cairn.Fold(events)
	if err != nil {
		return false, fmt.Errorf("snapshot %s: %w", id, err)
	}
	snap, err := state.Encode(events[len(events)-1])
	if err != nil {
		return false, fmt.Errorf("snapshot %s: %w", id, err)
	}
	if err := sn.PutSnapshot(ctx, id, snap); err != nil {
		return false, fmt.Errorf("snapshot %s: %w", id, err)
	}
	return true, nil
}

// snapshotState is what the session knows of its snapshots. With s.mu held.
type snapshotState struct {
	seq      int64 // the seq of the last snapshot written or loaded, 0 if none
	size     int   // its size in bytes
	bytes    int   // bytes of events appended since
	inFlight bool  // a snapshot is being written
	warned   bool  // a failed write was logged at warning level
	done     chan struct{}
}

// noteAppended counts events the store now holds and starts a snapshot
// in the background when the policy says so. With s.mu held.
func (s *Session) noteAppended(events []cairn.Event) {
	for _, e := range events {
		s.snap.bytes += e.Size()
	}
	sn, ok := s.store.(cairn.Snapshotter)
	if !ok || s.snap.inFlight || len(s.unsaved) > 0 || s.mem.Len() == 0 || s.savedSeq != s.state.LastSeq {
		return
	}
	p, ok := s.agent.snapshotPolicy()
	if !ok {
		return
	}
	since := s.state.LastSeq - s.snap.seq
	if since < int64(p.events) && s.snap.bytes < p.bytes || s.snap.bytes < s.snap.size {
		return
	}
	state, last := s.state.Clone(), s.mem.Event(s.mem.Len()-1)
	done := make(chan struct{})
	s.snap.inFlight, s.snap.done = true, done
	go func() {
		defer close(done)
		snap, err := state.Encode(last)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
			err = sn.PutSnapshot(ctx, s.id, snap)
			cancel()
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.snap.inFlight = false
		if err != nil {
			log := s.agent.logger().Debug
			if !s.snap.warned {
				s.snap.warned, log = true, s.agent.logger().Warn
			}
			log("a snapshot was not written; the session opens by replaying more events until the next one is", "session", s.id, "seq", state.LastSeq, "err", err)
			return
		}
		if snap.Seq > s.snap.seq {
			s.snap.seq, s.snap.size = snap.Seq, len(snap.Data)
			s.snap.bytes = 0
			for i := s.mem.Len() - 1; i >= 0 && s.mem.Event(i).Seq > snap.Seq; i-- {
				s.snap.bytes += s.mem.Event(i).Size()
			}
			// Appends made while this one was written may be due one.
			s.noteAppended(nil)
		}
	}()
}

// waitSnapshot waits for a snapshot being written, so that a run returns
// with its session's snapshot in the store.
func (s *Session) waitSnapshot() {
	for {
		s.mu.Lock()
		done, busy := s.snap.done, s.snap.inFlight
		s.mu.Unlock()
		if !busy {
			return
		}
		<-done
	}
}
