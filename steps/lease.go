package steps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
)

// DefaultLeaseTTL is the lease Options.Claim takes when Options.LeaseTTL
// is 0. It is renewed every third of it while the session is open.
const DefaultLeaseTTL = 15 * time.Second

// holder is the session's lease held by this process: renewed in the
// background, checked before each step runs, and fencing every append.
type holder struct {
	l      cairn.Leaser
	id     string
	ttl    time.Duration
	margin time.Duration
	log    *slog.Logger

	mu         sync.Mutex
	lease      cairn.Lease
	validUntil time.Time // by this process's monotonic clock: act only before it
	renewed    time.Time // when the last successful acquire or renew began
	renewErr   error     // the last renewal's error, nil after a success
	lost       error     // why the lease was lost, nil while held

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// defaultHolder names this process: host and process ID.
func defaultHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// claim acquires (or, with opts.Force, takes over) the lease of session id.
func claim(ctx context.Context, store cairn.Store, id string, opts Options, log *slog.Logger) (*holder, error) {
	l, ok := store.(cairn.Leaser)
	if !ok {
		return nil, errors.New("the store has no leases (cairn.Leaser): open the session without Claim")
	}
	name := opts.Holder
	if name == "" {
		name = defaultHolder()
	}
	ttl := opts.LeaseTTL
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	begin := time.Now()
	var (
		lease cairn.Lease
		err   error
	)
	if opts.Force {
		lease, err = l.Takeover(ctx, id, name, ttl)
	} else {
		lease, err = l.Acquire(ctx, id, name, ttl)
	}
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	// The margin covers the difference in clock rate between this process
	// and the store.
	h := &holder{l: l, id: id, ttl: ttl, margin: ttl / 5, log: log, lease: lease,
		renewed: begin, validUntil: begin.Add(ttl - ttl/5), stop: make(chan struct{}), done: make(chan struct{})}
	go h.renew()
	return h, nil
}

// check returns nil while the lease is surely valid: until the start of
// the last successful acquire or renew plus the TTL less the margin, by
// this process's clock. The store expires a lease at least TTL after it
// granted it, and it granted it after the request left, so a holder that
// stops there has stopped before anyone else can hold the session.
func (h *holder) check() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != nil {
		return h.lost
	}
	if time.Now().Before(h.validUntil) {
		return nil
	}
	err := fmt.Errorf("%w: the last renewal began at %s and the lease lasts %s (margin %s)",
		ErrLeaseExpired, h.renewed.Format("15:04:05.000"), h.ttl, h.margin)
	if h.renewErr != nil {
		err = fmt.Errorf("%w; the last attempt failed: %w", err, h.renewErr)
	}
	return err
}

// append writes with the lease: refused (cairn.ErrLeaseLost) once another
// holder has the session.
func (h *holder) append(ctx context.Context, expectSeq int64, events ...cairn.Event) error {
	h.mu.Lock()
	lease, lost := h.lease, h.lost
	h.mu.Unlock()
	if lost != nil {
		return lost
	}
	err := h.l.AppendFenced(ctx, h.id, lease, expectSeq, events...)
	if errors.Is(err, cairn.ErrLeaseLost) {
		h.setLost(err)
	}
	return err
}

func (h *holder) setLost(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost == nil {
		h.lost = fmt.Errorf("session %s: %w", h.id, err)
	}
}

// renew extends the lease every third of its TTL until release, or until
// the lease is found lost.
func (h *holder) renew() {
	defer close(h.done)
	t := time.NewTicker(h.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		h.mu.Lock()
		lease := h.lease
		h.mu.Unlock()
		begin := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), h.ttl/3)
		next, err := h.l.Renew(ctx, lease, h.ttl)
		cancel()
		switch {
		case err == nil:
			h.mu.Lock()
			h.lease, h.renewed, h.renewErr = next, begin, nil
			h.validUntil = begin.Add(h.ttl - h.margin)
			h.mu.Unlock()
		case errors.Is(err, cairn.ErrLeaseLost) || errors.Is(err, cairn.ErrNotFound):
			h.setLost(err)
			return
		default:
			// Try again at the next tick; past validUntil no step runs,
			// and fencing refuses the writes once another holder has it.
			h.mu.Lock()
			h.renewErr = err
			h.mu.Unlock()
			h.log.Warn("renew the session's lease", "session", h.id, "err", err)
		}
	}
}

// release stops the renewals and gives the lease up, so that another
// process can claim the session at once. Safe to call twice.
func (h *holder) release() error {
	var err error
	h.once.Do(func() {
		close(h.stop)
		<-h.done
		h.mu.Lock()
		lease, lost := h.lease, h.lost
		h.mu.Unlock()
		if lost != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		defer cancel()
		if rerr := h.l.Release(ctx, lease); rerr != nil && !errors.Is(rerr, cairn.ErrLeaseLost) && !errors.Is(rerr, cairn.ErrNotFound) {
			err = fmt.Errorf("release session %s: %w", h.id, rerr)
		}
	})
	return err
}

// checkLease reports whether the loop may act now: nil without a lease.
func (s *Session) checkLease() error {
	if s.lease == nil {
		return nil
	}
	return s.lease.check()
}

// Lease returns the lease the session holds now (renewals move its
// expiry), and false when it holds none (opened without Claim).
func (s *Session) Lease() (cairn.Lease, bool) {
	if s.lease == nil {
		return cairn.Lease{}, false
	}
	s.lease.mu.Lock()
	defer s.lease.mu.Unlock()
	return s.lease.lease, true
}
