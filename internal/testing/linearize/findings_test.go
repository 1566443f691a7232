package linearize

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/fault"
)

// The tests of this file are the smallest reproductions of the histories
// TestLinearizable found not linearizable: each drives one store, through
// a proxy that holds a reply or cuts a connection at a chosen moment, into
// answering one call in a way no order of the calls explains.

// rig is a backend with one store through a proxy (a, the client whose
// reply is held or lost) and one straight to the server (b).
type rig struct {
	be   *fault.Backend
	px   *fault.Proxy
	a, b cairn.Store
}

func newRig(t *testing.T, name string) *rig {
	t.Helper()
	be := fault.NewBackend(t, name)
	px := fault.StartProxy(t, be.URL)
	r := &rig{be: be, px: px, a: be.Open(t, fault.QuickMongo(px.URL(be.URL))), b: be.Direct(t)}
	r.warm(t)
	return r
}

// warm runs every kind of call once through a, on a session of its own,
// so that the reply a test holds is the one of the call it makes: on a
// Redis server that has not run cairn's scripts yet, the first reply to
// each is NOSCRIPT, and go-redis sends the script again.
func (r *rig) warm(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	st := r.a
	if err := st.Create(ctx, cairn.SessionMeta{ID: "warm"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, "warm", 0, linEvent(t, "warm", 1)); err != nil {
		t.Fatal(err)
	}
	if l, ok := st.(cairn.Leaser); ok {
		lease, err := l.Acquire(ctx, "warm", "warm", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if lease, err = l.Renew(ctx, lease, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := l.AppendFenced(ctx, "warm", lease, 1, linEvent(t, "warm", 2)); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Takeover(ctx, "warm", "warm", time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx, lease); err != nil && !errors.Is(err, cairn.ErrLeaseLost) {
			t.Fatal(err)
		}
	}
	if err := st.Delete(ctx, "warm"); err != nil {
		t.Fatal(err)
	}
}

// held waits until the server has answered a request whose reply the
// proxy holds.
func (r *rig) held(t *testing.T) {
	t.Helper()
	fault.Until(t, 10*time.Second, "the server's reply", func() (bool, error) { return r.px.Held() > 0, nil })
}

// background runs f on a, and returns its error on the channel.
func background(f func(context.Context) error) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- f(ctx)
	}()
	return done
}

// linEvent returns a custom event carrying id, at seq.
func linEvent(t *testing.T, id string, seq int64) cairn.Event {
	t.Helper()
	e := cairn.MustEvent(cairn.KindCustom, "linearize", cairn.Custom{Type: "linearize.op", Payload: []byte(`"` + id + `"`)})
	e.Seq = seq
	return e
}

// TestFinding_RedisRetryAfterAnotherAppend: an append lands, its reply is
// lost, another writer appends after it, and go-redis sends the append
// again on a new connection. The second try finds the session moved on
// and answers ErrConflict ("nothing of the rejected call was written"),
// although the first try wrote the events.
func TestFinding_RedisRetryAfterAnotherAppend(t *testing.T) {
	r := newRig(t, "redis")
	ctx := t.Context()
	if err := r.b.Create(ctx, cairn.SessionMeta{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	e1, e2 := linEvent(t, "first", 1), linEvent(t, "second", 2)
	r.px.StallReplies()
	done := background(func(ctx context.Context) error { return r.a.Append(ctx, "s", 0, e1) })
	r.held(t)
	if err := r.b.Append(ctx, "s", 1, e2); err != nil {
		t.Fatalf("the other writer's append after the first: %v", err)
	}
	r.px.Cut() // the first try's reply is lost; go-redis tries again
	r.px.Heal()
	err := <-done
	rec, lerr := r.b.Load(ctx, "s", 0)
	if lerr != nil {
		t.Fatal(lerr)
	}
	stored := len(rec.Events) >= 1 && string(rec.Events[0].Data) == string(e1.Data)
	t.Logf("append: %v; the store holds %d events, the first append's events stored: %v", err, len(rec.Events), stored)
	if stored && err != nil {
		t.Errorf("the append's events are stored at the seqs it asked for, and it returned %v: a caller told \"nothing written\" while it was (go-redis retried the script after the lost reply)", err)
	}
}

// TestFinding_RedisRetriedLeaseCalls: the same retry, for a release (the
// retry finds the lease gone, its own doing, and answers ErrLeaseLost)
// and for a fenced append followed by a takeover (the retry answers
// ErrLeaseLost, which says nothing was written, while the events are
// stored).
func TestFinding_RedisRetriedLeaseCalls(t *testing.T) {
	r := newRig(t, "redis")
	ctx := t.Context()
	l := r.b.(cairn.Leaser)
	for _, id := range []string{"rel", "fen"} {
		if err := r.b.Create(ctx, cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	lease, err := l.Acquire(ctx, "rel", "holder", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r.px.StallReplies()
	done := background(func(ctx context.Context) error { return r.a.(cairn.Leaser).Release(ctx, lease) })
	r.held(t)
	r.px.Cut()
	r.px.Heal()
	rerr := <-done
	cur, _ := l.CurrentLease(ctx, "rel")
	t.Logf("release: %v; the lease now: %q", rerr, cur.Holder)
	if rerr != nil && cur.Holder == "" {
		t.Errorf("Release answered %v, and the lease it was asked to release is released: by that call", rerr)
	}

	lease, err = l.Acquire(ctx, "fen", "holder", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	e1 := linEvent(t, "fenced", 1)
	r.px.StallReplies()
	done = background(func(ctx context.Context) error {
		return r.a.(cairn.Leaser).AppendFenced(ctx, "fen", lease, 0, e1)
	})
	r.held(t)
	if _, err := l.Takeover(ctx, "fen", "other", time.Minute); err != nil {
		t.Fatal(err)
	}
	r.px.Cut()
	r.px.Heal()
	ferr := <-done
	rec, err := r.b.Load(ctx, "fen", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fenced append: %v; the session holds %d events", ferr, len(rec.Events))
	if ferr != nil && len(rec.Events) == 1 && string(rec.Events[0].Data) == string(e1.Data) {
		t.Errorf("AppendFenced answered %v (nothing written), and its event is stored at the seq it asked for", ferr)
	}
}

// TestFinding_MongoCreateAfterInterruptedDelete: a Delete marks the
// session erased (Load: not found), and its connection breaks before it
// removes the session document. For StaleAfter (30 s) Create answers
// ErrExists while Load answers ErrNotFound.
func TestFinding_MongoCreateAfterInterruptedDelete(t *testing.T) {
	r := newRig(t, "mongodb")
	ctx := t.Context()
	if err := r.b.Create(ctx, cairn.SessionMeta{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	r.px.StallReplies()
	done := background(func(ctx context.Context) error { return r.a.Delete(ctx, "s") })
	r.held(t)
	r.px.Cut() // and stays cut: the Delete cannot finish
	t.Logf("delete: %v", <-done)
	_, lerr := r.b.Load(ctx, "s", 0)
	cerr := r.b.Create(ctx, cairn.SessionMeta{ID: "s"})
	_, lerr2 := r.b.Load(ctx, "s", 0)
	t.Logf("then load: %v; create: %v; load: %v", lerr, cerr, lerr2)
	if errors.Is(lerr, cairn.ErrNotFound) && errors.Is(cerr, cairn.ErrExists) && errors.Is(lerr2, cairn.ErrNotFound) {
		t.Errorf("Load says session s does not exist, Create says it does, and Load again that it does not: no order of the calls gives these answers")
	}
}

// TestFinding_MongoConflictWithUncommittedAppend: an append has inserted
// its event documents and waits for the reply before it commits. Another
// writer's append at the same seq answers ErrConflict, and a Load right
// after it finds the session still at that seq: the conflict names an
// append that, as far as any reader can tell, has not happened (and never
// will, when the first writer fails now).
func TestFinding_MongoConflictWithUncommittedAppend(t *testing.T) {
	r := newRig(t, "mongodb")
	ctx := t.Context()
	if err := r.b.Create(ctx, cairn.SessionMeta{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	r.px.StallReplies()
	done := background(func(ctx context.Context) error { return r.a.Append(ctx, "s", 0, linEvent(t, "first", 1)) })
	r.held(t) // the insert of the event documents is done; the commit waits
	aerr := r.b.Append(ctx, "s", 0, linEvent(t, "second", 1))
	rec, lerr := r.b.Load(ctx, "s", 0)
	if lerr != nil {
		t.Fatal(lerr)
	}
	r.px.Cut() // the first writer fails before its commit
	t.Logf("second writer: append %v, then load: last seq %d; first writer: %v", aerr, rec.Info.LastSeq, <-done)
	if errors.Is(aerr, cairn.ErrConflict) && rec.Info.LastSeq == 0 {
		t.Errorf("Append at seq 0 answered ErrConflict, and a Load after it finds the session at seq 0 with no events: no order of the calls gives these answers")
	}
}

// TestFinding_MongoAcquireLosesAppend: an Acquire and an Append on a new
// session, at the same moment, from two stores straight to the server,
// no fault at all. Both return nil, and the session then loads at seq 0:
// an acknowledged append lost. It is a race, so the test tries up to 200
// times (it was lost on the fifth try here).
func TestFinding_MongoAcquireLosesAppend(t *testing.T) {
	be := fault.NewBackend(t, "mongodb")
	a, b := be.Direct(t), be.Direct(t)
	ctx := t.Context()
	for i := range 200 {
		id := fmt.Sprint("race-", i)
		if err := a.Create(ctx, cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		var aerr, lerr error
		var wg sync.WaitGroup
		wg.Go(func() { _, lerr = b.(cairn.Leaser).Acquire(ctx, id, "holder", time.Minute) })
		wg.Go(func() { aerr = a.Append(ctx, id, 0, linEvent(t, id, 1)) })
		wg.Wait()
		rec, err := a.Load(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if aerr == nil && rec.Info.LastSeq != 1 {
			t.Fatalf("try %d: Append returned nil and Acquire %v, and the session loads at seq %d with %d events: the acknowledged append is lost", i, lerr, rec.Info.LastSeq, len(rec.Events))
		}
	}
}

// TestFinding_PostgresConflictAfterRecreate: an append to a session that
// does not exist matches no row, and before it reads why, the session is
// created. The read finds the session at the append's own seq and answers
// ErrConflict: a conflict at the session's last seq.
func TestFinding_PostgresConflictAfterRecreate(t *testing.T) {
	r := newRig(t, "postgres")
	ctx := t.Context()
	// Warm a's connection up: pgx prepares a statement the first time a
	// connection runs it, and that round trip's reply must not be the one
	// the proxy holds. An append, then one at a stale seq (which reads
	// why it matched nothing).
	if err := r.a.Create(ctx, cairn.SessionMeta{ID: "warm"}); err != nil {
		t.Fatal(err)
	}
	if err := r.a.Append(ctx, "warm", 0, linEvent(t, "w1", 1)); err != nil {
		t.Fatal(err)
	}
	if err := r.a.Append(ctx, "warm", 0, linEvent(t, "w2", 1)); !errors.Is(err, cairn.ErrConflict) {
		t.Fatalf("a stale append: %v, want a conflict", err)
	}
	r.px.StallReplies()
	done := background(func(ctx context.Context) error { return r.a.Append(ctx, "s", 0, linEvent(t, "first", 1)) })
	r.held(t) // the UPDATE matched no session
	if err := r.b.Create(ctx, cairn.SessionMeta{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	r.px.Release()
	err := <-done
	rec, lerr := r.b.Load(ctx, "s", 0)
	if lerr != nil {
		t.Fatal(lerr)
	}
	t.Logf("append at seq 0: %v; the session's last seq: %d", err, rec.Info.LastSeq)
	if errors.Is(err, cairn.ErrConflict) && rec.Info.LastSeq == 0 {
		t.Errorf("Append at seq 0 answered ErrConflict while the session was never anywhere but absent or at seq 0: not found (the session it was sent to did not exist) or success, not a conflict")
	}
}

// TestFinding_MongoRenewDuringAcquire: a lease has expired, its holder
// renews it while another store acquires it. The Acquire read the lease
// expired and took the next generation after the renewal had written its
// expiry and checked that the lease was still its own: both answered nil,
// two holders at once, each told the lease was theirs. A race, so the
// test tries up to 150 times (the old code lost on the 43rd try here), each with the renewal started a little
// later than the last.
func TestFinding_MongoRenewDuringAcquire(t *testing.T) {
	be := fault.NewBackend(t, "mongodb")
	a, b := be.Direct(t).(cairn.Leaser), be.Direct(t).(cairn.Leaser)
	ctx := t.Context()
	both := 0
	for i := range 150 {
		id := fmt.Sprint("renew-", i)
		if err := be.Direct(t).Create(ctx, cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		lease, err := b.Acquire(ctx, id, "first", 20*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond) // expired
		var renewed, acquired cairn.Lease
		var rerr, aerr error
		var wg sync.WaitGroup
		wg.Go(func() { acquired, aerr = a.Acquire(ctx, id, "second", time.Minute) })
		wg.Go(func() {
			time.Sleep(time.Duration(i%30) * time.Millisecond / 2)
			renewed, rerr = b.Renew(ctx, lease, time.Minute)
		})
		wg.Wait()
		cur, err := a.CurrentLease(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if rerr == nil && aerr == nil {
			both++
			t.Errorf("try %d: Renew of the expired lease returned a lease until %s, and Acquire by another holder returned token %d; the lease is now %q's: two holders at once",
				i, renewed.Expires.Format(time.StampMilli), acquired.Token, cur.Holder)
		}
		if both > 0 && i > 20 {
			break
		}
	}
}
