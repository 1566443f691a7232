package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/storetest"
)

// manyWriters has writers sessions appended to by one writer each, n
// single events apiece, and four more writers racing on one session, each
// retrying its event after a conflict. It checks that every session holds
// its events once and in order.
func manyWriters(t *testing.T, s *redis.Store, writers, n int) {
	t.Helper()
	ctx := t.Context()
	for i := range writers {
		if err := s.Create(ctx, cairn.SessionMeta{ID: fmt.Sprintf("s%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Create(ctx, cairn.SessionMeta{ID: "hot"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers+4)
	for i := range writers {
		wg.Go(func() {
			id := fmt.Sprintf("s%02d", i)
			for seq := int64(1); seq <= int64(n); seq++ {
				if err := s.Append(ctx, id, seq-1, storetest.Custom(seq, fmt.Sprintf("%s-%d", id, seq))); err != nil {
					errs <- fmt.Errorf("append to %s at %d: %w", id, seq, err)
					return
				}
			}
		})
	}
	const hotEach = 10
	for w := range 4 {
		wg.Go(func() {
			for k := range hotEach {
				tag := fmt.Sprintf("w%d-%d", w, k)
				for {
					rec, err := s.Load(ctx, "hot", 0)
					if err != nil {
						errs <- err
						return
					}
					last := int64(len(rec.Events))
					err = s.Append(ctx, "hot", last, storetest.Custom(last+1, tag))
					if err == nil {
						break
					}
					if !errors.Is(err, cairn.ErrConflict) {
						errs <- fmt.Errorf("append %s to hot: %w", tag, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	inOrder(t, s, writers, n)
	rec, err := s.Load(ctx, "hot", 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range rec.Events {
		seen[string(e.Data)] = true
	}
	if len(rec.Events) != 4*hotEach || len(seen) != 4*hotEach {
		t.Errorf("hot holds %d events, %d distinct; want %d of each", len(rec.Events), len(seen), 4*hotEach)
	}
}

// inOrder checks that sessions s00, s01, … (writers of them) each hold n
// events, the one at seq k tagged "sNN-k" (storetest.Custom).
func inOrder(t *testing.T, s *redis.Store, writers, n int) {
	t.Helper()
	for i := range writers {
		id := fmt.Sprintf("s%02d", i)
		rec, err := s.Load(t.Context(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Events) != n {
			t.Errorf("%s holds %d events, want %d", id, len(rec.Events), n)
		}
		for j, e := range rec.Events {
			if e.Seq != int64(j+1) || !strings.Contains(string(e.Data), fmt.Sprintf("%q", fmt.Sprintf("%s-%d", id, j+1))) {
				t.Errorf("%s event %d: seq %d, data %s", id, j+1, e.Seq, e.Data)
				break
			}
		}
	}
}

// More appends at once than go out alone share pipelines, and each is
// stored once, in order.
func TestPipelinedAppends(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{})
	manyWriters(t, s, 32, 30)
	pipelines, appends := s.Pipelines()
	t.Logf("%d pipelines held %d appends", pipelines, appends)
	if pipelines == 0 {
		t.Error("36 writers at once sent no pipeline")
	}
}

// A server that lost the scripts (SCRIPT FLUSH, a restart) answers a
// pipeline's EVALSHAs with NOSCRIPT: each is sent again with its body.
func TestPipelinedAppends_NoScript(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{})
	flusher := openStore(t, cairn.StoreOptions{})
	stop := make(chan struct{})
	flushed := make(chan int)
	go func() {
		n := 0
		defer func() { flushed <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if err := flusher.Client().ScriptFlush(context.Background()).Err(); err != nil {
				t.Error(err)
				return
			}
			n++
		}
	}()
	manyWriters(t, s, 32, 10)
	close(stop)
	t.Logf("scripts flushed %d times", <-flushed)
	if pipelines, _ := s.Pipelines(); pipelines == 0 {
		t.Error("36 writers at once sent no pipeline")
	}
}

// Pipelines cut off while in flight: an append whose reply was lost finds
// out whether it was applied; none answers that it conflicted or that the
// session is gone, and none is applied twice.
func TestPipelinedAppends_Cuts(t *testing.T) {
	s, p, direct := proxiedPair(t)
	ctx := t.Context()
	const writers, n = 40, 40
	for i := range writers {
		if err := direct.Create(ctx, cairn.SessionMeta{ID: fmt.Sprintf("s%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	cutter := make(chan int)
	go func() {
		cuts := 0
		defer func() { cutter <- cuts }()
		for cuts < 8 {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			p.Cut()
			cuts++
			time.Sleep(5 * time.Millisecond)
			p.Heal()
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	outages := 0
	for i := range writers {
		wg.Go(func() {
			id := fmt.Sprintf("s%02d", i)
			for seq := int64(1); seq <= n; {
				err := testenv.Bounded(t, 30*time.Second, "Append", func(ctx context.Context) error {
					return s.Append(ctx, id, seq-1, storetest.Custom(seq, fmt.Sprintf("%s-%d", id, seq)))
				})
				switch {
				case err == nil:
					seq++
					continue
				case !cairn.IsUnavailable(err):
					t.Errorf("append to %s at %d: %v, want nil or an outage", id, seq, err)
					return
				}
				// The outcome is unknown: look, as a caller does.
				mu.Lock()
				outages++
				mu.Unlock()
				rec, err := direct.Load(ctx, id, 0)
				if err != nil {
					t.Error(err)
					return
				}
				seq = int64(len(rec.Events)) + 1
			}
		})
	}
	wg.Wait()
	close(stop)
	cuts := <-cutter
	t.Logf("%d cuts, %d appends of unknown outcome", cuts, outages)
	inOrder(t, direct, writers, n)
	if pipelines, _ := s.Pipelines(); pipelines == 0 {
		t.Error("40 writers at once sent no pipeline")
	}
}
