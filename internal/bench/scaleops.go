package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/sessions"
)

// scaleRun times the operations of the commands on a filled store.
type scaleRun struct {
	s    cairn.Store
	p    plan
	reps int
	say  func(string)
	pick int // the next live session to read
	// took, when an operation sets it, is the time of the part of it that
	// counts (the Delete of a session it had to write first).
	took time.Duration
}

// opBudget is the time after which an operation is timed no more, once
// it ran 3 times.
const opBudget = 15 * time.Second

// pageSize is the page of `cairn sessions list`; prefixLimit what a
// lookup by prefix asks for (enough to show 20 candidates and say there
// are more).
const (
	pageSize    = 50
	prefixLimit = 21
)

// timeOp runs f once untimed, then up to reps times timed, and returns the
// median and the slowest. f returns the rows it got and what is wrong
// with them ("" when nothing).
func (r *scaleRun) timeOp(ctx context.Context, name string, f func() (int, string, error)) (ScaleOp, error) {
	r.say(name)
	op := ScaleOp{Name: name}
	if _, _, err := f(); err != nil {
		return op, fmt.Errorf("%s: %w", name, err)
	}
	var (
		durs  []time.Duration
		total time.Duration
	)
	for len(durs) < r.reps && (len(durs) < 3 || total < opBudget) {
		if err := ctx.Err(); err != nil {
			return op, err
		}
		t0 := time.Now()
		r.took = 0
		rows, note, err := f()
		d := time.Since(t0)
		if r.took > 0 {
			d = r.took
		}
		if err != nil {
			return op, fmt.Errorf("%s: %w", name, err)
		}
		durs, total = append(durs, d), total+d
		op.Rows, op.Note = rows, note
	}
	op.Reps, op.P50MS, op.MaxMS = len(durs), percentile(durs, 50)/1e3, percentile(durs, 100)/1e3
	return op, nil
}

// live returns the ID of a session that has not expired and has a
// history, a different one at each call.
func (r *scaleRun) live() string { return r.p.sessionAt(r.liveIndex()).meta.ID }

// liveIndex is live's session's index in the plan.
func (r *scaleRun) liveIndex() int {
	e := r.p.expired()
	for {
		r.pick++
		i := e + (r.pick*7919)%(r.p.n-e)
		if s := r.p.sessionAt(i); len(s.events) > 0 {
			return i
		}
	}
}

// ops times every operation but gc, in the order of the report.
func (r *scaleRun) ops(ctx context.Context, res *ScaleResult) error {
	for _, o := range []struct {
		name string
		f    func(ctx context.Context) (int, string, error)
	}{
		{"list", r.list},
		{"filter_status_common", r.filter(cairn.ListOptions{Status: []cairn.Status{cairn.StatusCompleted}})},
		{"filter_status_rare", r.filter(cairn.ListOptions{Status: []cairn.Status{cairn.StatusMaxSteps}})},
		{"filter_status_none", r.filter(cairn.ListOptions{Status: []cairn.Status{cairn.StatusDamaged}})},
		{"filter_label", r.filter(cairn.ListOptions{Labels: map[string]string{teamLabel: teams[0]}})},
		{"page_20", nil},
		{"show", r.show},
		{"show_missing", r.missing},
		{"prefix", r.prefix},
		{"search", r.search},
		{"delete", r.delete},
	} {
		f := o.f
		if f == nil {
			var err error
			if f, err = r.page(ctx, 20); err != nil {
				return fmt.Errorf("%s: %w", o.name, err)
			}
		}
		op, err := r.timeOp(ctx, o.name, func() (int, string, error) { return f(ctx) })
		if err != nil {
			return err
		}
		res.Ops = append(res.Ops, op)
	}
	return nil
}

// list is the first page of `cairn sessions list`: the sessions and the
// holders of their leases.
func (r *scaleRun) list(ctx context.Context) (int, string, error) {
	page, err := r.s.List(ctx, cairn.ListOptions{Limit: pageSize})
	if err != nil {
		return 0, "", err
	}
	note := ""
	if l, ok := r.s.(cairn.Leaser); ok {
		ids := make([]string, len(page.Sessions))
		for i, info := range page.Sessions {
			ids[i] = info.ID
		}
		if _, err := l.CurrentLeases(ctx, ids); err != nil {
			return 0, "", fmt.Errorf("current leases: %w", err)
		}
	} else {
		note = "no leases: the store is not a cairn.Leaser"
	}
	if want := min(pageSize, r.p.n-r.p.expired()); len(page.Sessions) != want {
		note = fmt.Sprintf("%d sessions, want %d", len(page.Sessions), want)
	}
	return len(page.Sessions), note, nil
}

// filter is a first page filtered by opts; the note says when a session
// on it does not match.
func (r *scaleRun) filter(opts cairn.ListOptions) func(context.Context) (int, string, error) {
	opts.Limit = pageSize
	return func(ctx context.Context) (int, string, error) {
		page, err := r.s.List(ctx, opts)
		if err != nil {
			return 0, "", err
		}
		for _, info := range page.Sessions {
			if len(opts.Status) > 0 && info.Status != opts.Status[0] {
				return len(page.Sessions), fmt.Sprintf("session %s has status %s: the filter was not applied", info.ID, info.Status), nil
			}
			for k, v := range opts.Labels {
				if info.Labels[k] != v {
					return len(page.Sessions), fmt.Sprintf("session %s has no label %s=%s: the filter was not applied", info.ID, k, v), nil
				}
			}
		}
		return len(page.Sessions), "", nil
	}
}

// page walks to page n of the unfiltered list through the cursors (or to
// the last page, in a smaller store), and returns the reading of that
// page.
func (r *scaleRun) page(ctx context.Context, n int) (func(context.Context) (int, string, error), error) {
	opts := cairn.ListOptions{Limit: pageSize}
	at := 1
	for ; at < n; at++ {
		page, err := r.s.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		if page.Next == "" {
			break
		}
		opts.Cursor = page.Next
	}
	note := ""
	if at < n {
		note = fmt.Sprintf("page %d, the last", at)
	}
	return func(ctx context.Context) (int, string, error) {
		page, err := r.s.List(ctx, opts)
		if err != nil {
			return 0, "", err
		}
		return len(page.Sessions), note, nil
	}, nil
}

// show is `cairn show` of a session: its whole history.
func (r *scaleRun) show(ctx context.Context) (int, string, error) {
	rec, err := r.s.Load(ctx, r.live(), 0)
	if err != nil {
		return 0, "", err
	}
	return len(rec.Events), "", nil
}

// missing is `cairn show` of a mistyped ID (a live one with its last
// character changed): the lookup of the ID, then of the sessions whose ID
// starts with it.
func (r *scaleRun) missing(ctx context.Context) (int, string, error) {
	id := r.live()
	ref := id[:len(id)-1] + "z" // not a hex digit: no session has it
	if _, err := r.s.Stat(ctx, ref); !errors.Is(err, cairn.ErrNotFound) {
		return 0, "", fmt.Errorf("load of missing session %s: got %v, want cairn.ErrNotFound", ref, err)
	}
	page, err := r.s.List(ctx, cairn.ListOptions{Prefix: ref, Limit: prefixLimit})
	if err != nil {
		return 0, "", err
	}
	if len(page.Sessions) > 0 {
		return len(page.Sessions), fmt.Sprintf("%d sessions listed for the prefix %s, which none has: the prefix was not applied", len(page.Sessions), ref), nil
	}
	return 0, "", nil
}

// prefix is the lookup of the first 8 characters of an ID.
func (r *scaleRun) prefix(ctx context.Context) (int, string, error) {
	ref := r.live()[:8]
	page, err := r.s.List(ctx, cairn.ListOptions{Prefix: ref, Limit: prefixLimit})
	if err != nil {
		return 0, "", err
	}
	for _, info := range page.Sessions {
		if !strings.HasPrefix(info.ID, ref) {
			return len(page.Sessions), fmt.Sprintf("session %s listed for the prefix %s: the prefix was not applied", info.ID, ref), nil
		}
	}
	if len(page.Sessions) == 0 {
		return 0, "", fmt.Errorf("no session listed for the prefix %s of a live session", ref)
	}
	return len(page.Sessions), "", nil
}

// search is `cairn sessions search` of the order number of a live
// session: a word that one session among all holds. A store that cannot
// search says so in the note.
func (r *scaleRun) search(ctx context.Context) (int, string, error) {
	i := r.liveIndex()
	id := r.p.sessionAt(i).meta.ID
	found, err := sessions.Search(ctx, r.s, orderWord(i), sessions.SearchOptions{})
	if errors.Is(err, sessions.ErrNoSearch) {
		return 0, "the store does not search", nil
	}
	if err != nil {
		return 0, "", err
	}
	if len(found) != 1 || found[0].Session.ID != id {
		return len(found), fmt.Sprintf("%d sessions found for the order of %s, which only it holds", len(found), id), nil
	}
	return 1, "", nil
}

// delete is `cairn delete` of a session of 4 events, written untimed
// first, so that the store keeps its size.
func (r *scaleRun) delete(ctx context.Context) (int, string, error) {
	id := "victim-" + cairn.NewID()
	if err := writeSession(ctx, r.s, session{meta: cairn.SessionMeta{ID: id}, events: turn(cairn.StatusCompleted, r.p.t0, 0)}); err != nil {
		return 0, "", err
	}
	t0 := time.Now()
	if err := r.s.Delete(ctx, id); err != nil {
		return 0, "", err
	}
	r.took = time.Since(t0)
	return 1, "", nil
}

// gc sweeps the expired sessions while a writer appends to another
// session, and compares the writer's latency with its latency alone.
func (r *scaleRun) gc(ctx context.Context) (*ScaleGC, error) {
	sw, ok := r.s.(driver.Sweeper)
	if !ok {
		return &ScaleGC{Note: "no gc: the store is not a driver.Sweeper"}, nil
	}
	id := "writer-" + cairn.NewID()
	if err := r.s.Create(ctx, cairn.SessionMeta{ID: id}); err != nil {
		return nil, err
	}
	defer func() { _ = r.s.Delete(context.WithoutCancel(ctx), id) }()
	w := &appender{s: r.s, id: id}
	idle, err := w.run(ctx, func(n int) bool { return n < 200 })
	if err != nil {
		return nil, fmt.Errorf("writer: %w", err)
	}
	var (
		done    atomic.Bool
		during  []time.Duration
		werr    error
		wg      sync.WaitGroup
		started = make(chan struct{})
	)
	wg.Go(func() {
		close(started)
		during, werr = w.run(ctx, func(int) bool { return !done.Load() })
	})
	<-started
	t0 := time.Now()
	removed, err := sw.Sweep(ctx)
	el := time.Since(t0)
	done.Store(true)
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if werr != nil {
		return nil, fmt.Errorf("writer: %w", werr)
	}
	g := &ScaleGC{Removed: removed, MS: round(float64(el.Microseconds()) / 1e3),
		WriterIdle: latency(idle), WriterDuringGC: latency(during)}
	if removed > 0 {
		g.MSPer1000 = round(g.MS / float64(removed) * 1000)
	}
	if want := r.p.expired(); removed != want {
		g.Note = fmt.Sprintf("removed %d sessions, want the %d expired (a store that removes expired sessions as it meets them may have removed them before)", removed, want)
	}
	return g, nil
}

// appender appends one ~1 KB event at a time to a session.
type appender struct {
	s    cairn.Store
	id   string
	last int64
}

// run appends while more says so, and returns each append's time.
func (w *appender) run(ctx context.Context, more func(n int) bool) ([]time.Duration, error) {
	var durs []time.Duration
	for more(len(durs)) {
		t0 := time.Now()
		if err := w.s.Append(ctx, w.id, w.last, Event(w.last+1)); err != nil {
			return durs, err
		}
		durs = append(durs, time.Since(t0))
		w.last++
	}
	return durs, nil
}

func latency(d []time.Duration) Latency {
	return Latency{Appends: len(d), P50MS: percentile(d, 50) / 1e3, P99MS: percentile(d, 99) / 1e3, MaxMS: percentile(d, 100) / 1e3}
}
