package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn"
)

// slot is a session kept near one history length. Below 1,000 events a
// slot moves to a fresh session every rotate appends, so that the length
// it measures stays near its nominal one.
type slot struct {
	length int
	id     string
	last   int64
	taken  int
	durs   []time.Duration
}

const rotate = 20

func (s *slot) ready(ctx context.Context, b *backend) error {
	if s.id != "" && (s.length >= 1000 || s.taken < rotate) {
		return nil
	}
	id, err := b.session(ctx)
	if err != nil {
		return err
	}
	s.id, s.last, s.taken = id, 0, 0
	if err := prefill(ctx, b.store, s.id, 0, int64(s.length)); err != nil {
		return err
	}
	s.last = int64(s.length)
	return nil
}

// measureAppend times single appends of one realistic event at each
// history length, and the backend's floor write, in turn, so that all of
// them see the same load on a shared machine.
func measureAppend(ctx context.Context, b *backend, cfg settings, res *Result) error {
	slots := make([]*slot, len(cfg.lengths))
	for i, n := range cfg.lengths {
		slots[i] = &slot{length: n}
	}
	body, _ := json.Marshal(Event(1))
	var floor, atomic []time.Duration
	for range cfg.samples {
		for _, s := range slots {
			if err := s.ready(ctx, b); err != nil {
				return err
			}
			e := Event(s.last + 1)
			t0 := time.Now()
			if err := b.store.Append(ctx, s.id, s.last, e); err != nil {
				return err
			}
			s.durs = append(s.durs, time.Since(t0))
			s.last++
			s.taken++
		}
		t0 := time.Now()
		if err := b.floor.write(ctx, body); err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		floor = append(floor, time.Since(t0))
		if b.atomic != nil {
			t0 := time.Now()
			if err := b.atomic.write(ctx, body); err != nil {
				return fmt.Errorf("atomic floor: %w", err)
			}
			atomic = append(atomic, time.Since(t0))
		}
	}
	res.AppendP50, res.AppendP99 = map[string]float64{}, map[string]float64{}
	for _, s := range slots {
		res.AppendP50[key(s.length)] = percentile(s.durs, 50)
		res.AppendP99[key(s.length)] = percentile(s.durs, 99)
	}
	res.FloorP50, res.FloorP99 = percentile(floor, 50), percentile(floor, 99)
	if len(atomic) > 0 {
		res.AtomicFloorP50, res.AtomicFloorP99 = percentile(atomic, 50), percentile(atomic, 99)
	}
	return nil
}

// measureResume times loading a session and folding it to a State, and
// the floor: the same envelopes read back from bare rows of the backend
// and decoded plainly. It also measures the bytes stored per event.
func measureResume(ctx context.Context, b *backend, cfg settings, res *Result) error {
	res.ResumeMS, res.ResumeFloorMS = map[string]float64{}, map[string]float64{}
	for _, n := range cfg.resume {
		before, known, err := b.size(ctx, nil)
		if err != nil {
			return fmt.Errorf("size: %w", err)
		}
		id, err := b.session(ctx)
		if err != nil {
			return err
		}
		if err := prefill(ctx, b.store, id, 0, int64(n)); err != nil {
			return err
		}
		if known && res.BytesPerEvent == nil {
			after, _, err := b.size(ctx, []string{id})
			if err != nil {
				return fmt.Errorf("size: %w", err)
			}
			if b.name == "file" {
				before = 0 // the size of this session's folder alone
			}
			v := round(float64(after-before) / float64(n))
			res.BytesPerEvent = &v
		}
		rows := make([][]byte, n)
		for i, e := range Events(1, int64(n)) {
			rows[i], _ = json.Marshal(e)
		}
		name := fmt.Sprint(n)
		if err := b.floor.put(ctx, name, rows); err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		var cairnMS, floorMS []float64
		for range cfg.resumeRep {
			t0 := time.Now()
			rec, err := b.store.Load(ctx, id, 0)
			if err != nil {
				return err
			}
			st, err := cairn.Fold(rec.Events)
			if err != nil {
				return err
			}
			if st.LastSeq != int64(n) {
				return fmt.Errorf("resumed %d events, want %d", st.LastSeq, n)
			}
			t1 := time.Now()
			got, err := b.floor.get(ctx, name)
			if err != nil {
				return fmt.Errorf("floor: %w", err)
			}
			if len(got) != n {
				return fmt.Errorf("floor read %d rows, want %d", len(got), n)
			}
			if err := decodePlain(got); err != nil {
				return fmt.Errorf("floor: %w", err)
			}
			cairnMS = append(cairnMS, float64(t1.Sub(t0).Microseconds())/1e3)
			floorMS = append(floorMS, float64(time.Since(t1).Microseconds())/1e3)
		}
		res.ResumeMS[name], res.ResumeFloorMS[name] = round(median(cairnMS)), round(median(floorMS))
	}
	return nil
}

// measureConcurrency compares the appends per second of one session
// appending alone with those of 8 and of 64 sessions appending at once.
func measureConcurrency(ctx context.Context, b *backend, cfg settings, res *Result) error {
	var ratios, ratios64, one, eight, many, floor []float64
	for range cfg.rounds {
		r1, err := throughput(ctx, b, 1, cfg.perWriter)
		if err != nil {
			return err
		}
		r8, err := throughput(ctx, b, 8, cfg.perWriter)
		if err != nil {
			return err
		}
		// 64 writers append half as many each: the run takes 4 times the
		// appends of 8 writers, not 8 times.
		r64, err := throughput(ctx, b, 64, max(1, cfg.perWriter/2))
		if err != nil {
			return err
		}
		one, eight, many = append(one, r1), append(eight, r8), append(many, r64)
		ratios, ratios64 = append(ratios, r8/r1), append(ratios64, r64/r1)
		if b.floorWriters != nil {
			f1, err := floorThroughput(ctx, b, 1, cfg.perWriter)
			if err != nil {
				return fmt.Errorf("floor: %w", err)
			}
			f8, err := floorThroughput(ctx, b, 8, cfg.perWriter)
			if err != nil {
				return fmt.Errorf("floor: %w", err)
			}
			floor = append(floor, f8/f1)
		}
	}
	res.Throughput1, res.Throughput8, res.Throughput64 = round(median(one)), round(median(eight)), round(median(many))
	res.Concurrent8vs1, res.Concurrent64vs1 = round(median(ratios)), round(median(ratios64))
	if len(floor) > 0 {
		res.Floor8vs1 = round(median(floor))
	}
	return nil
}

// floorThroughput runs n floor writes on each of writers floor writers at
// once, and returns the writes per second of all of them.
func floorThroughput(ctx context.Context, b *backend, writers, n int) (float64, error) {
	ws, err := b.floorWriters(writers)
	if err != nil {
		return 0, err
	}
	body, _ := json.Marshal(Event(1))
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, w := range ws {
		wg.Go(func() {
			for range n {
				if errs[i] = w.write(ctx, body); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(t0)
	for _, w := range ws {
		if f, ok := w.(floor); ok {
			errs = append(errs, f.close(ctx))
		}
	}
	return float64(writers*n) / el.Seconds(), errors.Join(errs...)
}

// throughput runs writers sessions, each appending n events one at a
// time, and returns the appends per second of all of them.
func throughput(ctx context.Context, b *backend, writers, n int) (float64, error) {
	st := b.store
	ids := make([]string, writers)
	for i := range ids {
		var err error
		if ids[i], err = b.session(ctx); err != nil {
			return 0, err
		}
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
	)
	ctx, done, stop := watchStall(ctx, fmt.Sprintf("%d sessions appending at once", writers), stallAfter)
	defer stop()
	t0 := time.Now()
	for _, id := range ids {
		wg.Go(func() {
			for seq := int64(1); seq <= int64(n); seq++ {
				if err := st.Append(ctx, id, seq-1, Event(seq)); err != nil {
					if cause := context.Cause(ctx); cause != nil {
						err = cause
					}
					mu.Lock()
					ferr = err
					mu.Unlock()
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	el := time.Since(t0)
	return float64(writers*n) / el.Seconds(), ferr
}

// stallAfter is how long the concurrency measurement waits for any of its
// appends to finish before it gives up on the store (a variable for tests).
var stallAfter = time.Minute

// errStalled says that a store stopped answering a measurement.
var errStalled = errors.New("the store stopped answering")

// watchStall returns a context that is canceled, with a cause that wraps
// errStalled and names what, once the counter it returns has not moved
// for limit; stop ends the watch. A server that stops answering (seen of
// FerretDB under 64 writers) then ends the measurement with an error
// instead of holding the bench for good.
func watchStall(ctx context.Context, what string, limit time.Duration) (context.Context, *atomic.Int64, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	var done atomic.Int64
	go func() {
		tick := time.NewTicker(min(time.Second, limit/4))
		defer tick.Stop()
		last, since := done.Load(), time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if n := done.Load(); n != last {
					last, since = n, now
				} else if now.Sub(since) >= limit {
					cancel(fmt.Errorf("%s: no append finished in %s: %w", what, limit, errStalled))
					return
				}
			}
		}
	}()
	return ctx, &done, func() { cancel(nil) }
}

// workDir returns dir, or a new temporary folder that cleanup removes.
func workDir(dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o700)
	}
	d, err := os.MkdirTemp("", "cairn-bench-")
	if err != nil {
		return "", nil, err
	}
	return d, func() { os.RemoveAll(d) }, nil
}

// checkSizes reports an error unless sizes holds at least one size, each
// of 100 or more; unit is what a size counts ("items", "sessions").
func checkSizes(sizes []int, unit string) error {
	if len(sizes) == 0 {
		return fmt.Errorf("no number of %s to measure at", unit)
	}
	for _, n := range sizes {
		if n < 100 {
			return fmt.Errorf("%d %s: measure at 100 or more", n, unit)
		}
	}
	return nil
}

// orIgnore returns say, or, when it is nil, a func that ignores what it
// is told.
func orIgnore(say func(string)) func(string) {
	if say == nil {
		return func(string) {}
	}
	return say
}
