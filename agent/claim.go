package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/telemetry"
)

// DefaultClaimTTL is the lease a Claim takes when ClaimOptions.TTL is 0. It
// is renewed every third of it while the claim is held, so a dead holder
// frees the session within this long.
const DefaultClaimTTL = 15 * time.Second

// ClaimOptions configure Session.Claim.
type ClaimOptions struct {
	// Holder names the claimant in the lease, as others see it (cairn
	// sessions list, the "being run elsewhere" error). Empty: DefaultHolder.
	Holder string
	// TTL is the lease's duration; 0 means DefaultClaimTTL.
	TTL time.Duration
	// Force takes the lease over even while another holder's is live
	// (cairn.Leaser.Takeover); that holder's writes are refused from then
	// on. It does not break a LockFile held by a live process.
	Force bool
	// LockFile, for a store on this machine (sqlite, file), is a file
	// whose operating-system lock is taken first: the kernel releases it
	// when the process dies, however it dies, so the session is free again
	// at once after a crash. When the store has leases as well, holding the
	// lock proves that no other claimant using the same file is alive, so
	// a lease left by a dead one is taken over at once instead of waiting
	// for it to expire, while the lease of a live process is refused
	// unless Force. Empty: the store's own lock file for the session when
	// it is a driver.LocalLocker, on a system with lock files (unix), so
	// that every claimant of a local store uses the same one; none
	// otherwise.
	LockFile string
	// OnTakeover, when set, is told before Force takes the session from
	// another holder: its name, and when its lease would have run out
	// (zero for a live process holding the lock file, whose writes are
	// then fenced out through the lease).
	OnTakeover func(holder string, until time.Time)
	// Adopt, when its Holder is set, is a lease of this session that the
	// caller already holds (from driver.Claimer.ClaimNext, say): the claim
	// takes it as it is instead of acquiring one, and renews and releases
	// it like its own.
	Adopt cairn.Lease
	// AcquiredAt, with Adopt, is when the caller asked for the adopted
	// lease (time.Now() taken before the call that acquired it): the
	// lease is surely valid until AcquiredAt + TTL - Margin by this
	// process's clock. Zero: the lease's own Expires is trusted instead,
	// read on this machine's wall clock.
	AcquiredAt time.Time
	// Margin is how long before its lease could expire the holder stops
	// acting when renewals fail: it covers the difference in clock rate
	// between this process and the store, and the skew between the wall
	// clocks of the machines sharing the store. 0 means TTL/5.
	Margin time.Duration
	// OnLost is called once, from the renewing goroutine, when the lease
	// is found lost (taken over by another holder). Writes are already
	// refused then; stop the run (cancel its context).
	OnLost func(error)
}

// DefaultHolder returns a holder name for this process: host and process ID.
func DefaultHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// Claim is a session's lease held by this process: while it is held every
// write of the session is fenced with the lease (cairn.Leaser.AppendFenced),
// so once another holder has taken the session over no write of this one
// gets in. It is renewed in the background until Release.
type Claim struct {
	s      *Session
	leaser cairn.Leaser // nil: no lease (a lock file, or nothing)
	ttl    time.Duration
	margin time.Duration
	lock   *fileLock
	onLost func(error)

	mu         sync.Mutex
	lease      cairn.Lease
	err        error     // why the lease was lost, nil while held
	validUntil time.Time // by this process's monotonic clock: act only before it
	renewed    time.Time // when the last successful acquire or renew began
	renewErr   error     // the last renewal's error, nil after a success

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Claim takes the session for this process. On a store with leases it
// acquires the session's lease (a *cairn.LeaseHeldError, wrapping
// cairn.ErrLeaseHeld, names the holder while another holds it), renews it
// every TTL/3 and fences every write with it until Release. On a store
// without leases it takes the operating-system lock of opts.LockFile, if
// given, or holds nothing: writes then rely on the store's seq check alone
// (see cairn.Leaser). Claim at most once at a time per Session.
func (s *Session) Claim(ctx context.Context, opts ClaimOptions) (*Claim, error) {
	if opts.Holder == "" {
		opts.Holder = DefaultHolder()
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultClaimTTL
	}
	if opts.Margin <= 0 || opts.Margin >= opts.TTL {
		opts.Margin = opts.TTL / 5
	}
	c := &Claim{s: s, ttl: opts.TTL, margin: opts.Margin, onLost: opts.OnLost, stop: make(chan struct{}), done: make(chan struct{})}
	l, leases := s.store.(cairn.Leaser)
	if err := c.lockFirst(ctx, opts, l); err != nil {
		return nil, fmt.Errorf("claim session %s: %w", s.id, err)
	}
	if leases {
		var (
			lease cairn.Lease
			err   error
		)
		begin := time.Now()
		switch {
		case opts.Adopt.Holder != "":
			if opts.Adopt.Session != s.id {
				err = fmt.Errorf("the lease to adopt is of session %s", opts.Adopt.Session)
			}
			lease = opts.Adopt
			switch {
			case !opts.AcquiredAt.IsZero():
				begin = opts.AcquiredAt
			default:
				// Expires is on the store's clock: read it on this one.
				begin = begin.Add(min(time.Until(lease.Expires), opts.TTL) - opts.TTL)
			}
		case opts.Force || c.lock != nil:
			lease, err = l.Takeover(ctx, s.id, opts.Holder, opts.TTL)
		default:
			lease, err = l.Acquire(ctx, s.id, opts.Holder, opts.TTL)
		}
		if err != nil {
			if c.lock != nil {
				_ = c.lock.unlock()
			}
			return nil, fmt.Errorf("claim session %s: %w", s.id, err)
		}
		c.leaser, c.lease = l, lease
		c.renewed, c.validUntil = begin, begin.Add(c.ttl-c.margin)
		go c.renew()
	} else {
		close(c.done)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claim != nil {
		c.release(ctx)
		return nil, fmt.Errorf("claim session %s: %w", s.id, ErrBusy)
	}
	s.claim = c
	return c, nil
}

// lockFirst takes the session's lock file, if it has one, and decides
// whether the claim may go on to the lease: a live holder of the lock, or
// of the lease while this process holds the lock, is refused with a
// *cairn.LeaseHeldError unless opts.Force (then opts.OnTakeover is told,
// and a live lock's holder is fenced out through the lease instead).
func (c *Claim) lockFirst(ctx context.Context, opts ClaimOptions, l cairn.Leaser) error {
	path := opts.LockFile
	if path == "" {
		path = storeLockFile(c.s.store, c.s.id)
	}
	if path != "" {
		lock, err := lockFile(path, c.s.id, opts.Holder)
		held, isHeld := errors.AsType[*cairn.LeaseHeldError](err)
		switch {
		case err == nil:
			c.lock = lock
		case opts.Force && l != nil && isHeld:
			// A live process on this machine holds the lock: fence it
			// out through the lease, which Force takes over.
			if opts.OnTakeover != nil {
				opts.OnTakeover(held.Holder, time.Time{})
			}
			return nil
		default:
			return err
		}
	}
	if l == nil || opts.Adopt.Holder != "" || (c.lock == nil && !opts.Force) {
		return nil
	}
	cur, err := l.CurrentLease(ctx, c.s.id)
	if err != nil && !errors.Is(err, cairn.ErrNotFound) {
		c.unlock()
		return fmt.Errorf("read the lease: %w", err)
	}
	switch {
	case cur.Holder == "":
	case opts.Force:
		if opts.OnTakeover != nil {
			opts.OnTakeover(cur.Holder, cur.Expires)
		}
	case holderAlive(cur.Holder):
		// The lock proves no claimant that uses it is alive; a live lease
		// of a process that holds no lock (one that took the session over
		// with Force, a program without the lock file) is not taken over.
		c.unlock()
		return &cairn.LeaseHeldError{Session: c.s.id, Holder: cur.Holder, Expires: cur.Expires}
	}
	return nil
}

func (c *Claim) unlock() {
	if c.lock != nil {
		_ = c.lock.unlock()
		c.lock = nil
	}
}

// storeLockFile returns the lock file of session id of a store on this
// machine (driver.LocalLocker), where lock files work, and "" otherwise.
func storeLockFile(store cairn.Store, id string) string {
	if l, ok := store.(driver.LocalLocker); ok && lockFilesWork {
		return l.LockFile(id)
	}
	return ""
}

// Lease returns the lease the claim holds now (renewals move its expiry),
// and false when the claim holds no lease (a store without leases).
func (c *Claim) Lease() (cairn.Lease, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lease, c.leaser != nil
}

// Err returns why the claim was lost (wrapping cairn.ErrLeaseLost), or nil
// while it is held.
func (c *Claim) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// ErrLeaseExpired is returned (wrapped) by a run whose claim's lease could
// not be renewed in time: the holder stopped acting, so that no one else
// can hold the session while it still runs tools or model calls. The run
// is interrupted (reason cairn.InterruptLease) and can be resumed.
var ErrLeaseExpired = errors.New("lease could not be renewed")

// Check reports whether the holder may act now (call a tool, call the
// model). It returns nil while the lease is surely valid by this process's
// monotonic clock: until the start of the last successful acquire or renew
// plus the TTL less the margin. The store expires a lease at least TTL
// after it granted or renewed it, and it granted it after the request
// left, so a holder that stops at that point has stopped before any taker
// can have the lease. Past it Check returns an error wrapping
// ErrLeaseExpired (with the renewals' last error); once the lease is lost
// it returns the loss (wrapping cairn.ErrLeaseLost). A claim held by an
// operating-system lock, or with no lease at all, is always valid: no
// other claimant that uses the lock can take the session while this
// process lives.
func (c *Claim) Check() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	if c.leaser == nil || c.lock != nil || time.Now().Before(c.validUntil) {
		return nil
	}
	err := fmt.Errorf("session %s: %w: the last renewal began at %s and the lease lasts %s (margin %s)",
		c.s.id, ErrLeaseExpired, c.renewed.Format("15:04:05.000"), c.ttl, c.margin)
	if c.renewErr != nil {
		err = fmt.Errorf("%w; the last attempt failed: %w", err, c.renewErr)
	}
	return err
}

// renew extends the lease every third of its TTL until Release, or until
// the lease is found lost.
func (c *Claim) renew() {
	defer close(c.done)
	t := time.NewTicker(c.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		c.mu.Lock()
		lease := c.lease
		c.mu.Unlock()
		begin := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), c.ttl/3)
		next, err := c.leaser.Renew(ctx, lease, c.ttl)
		cancel()
		switch {
		case err == nil:
			c.mu.Lock()
			c.lease, c.renewed, c.renewErr = next, begin, nil
			c.validUntil = begin.Add(c.ttl - c.margin)
			c.mu.Unlock()
		case errors.Is(err, cairn.ErrLeaseLost) || errors.Is(err, cairn.ErrNotFound):
			c.lost(err)
			return
		default:
			// The store did not answer: try again at the next tick. Past
			// the lease's validity Check stops the run from acting;
			// fencing refuses its writes once another holder has it.
			c.mu.Lock()
			c.renewErr = err
			c.mu.Unlock()
			c.s.agent.logger().Warn("renew the session's lease", "session", c.s.id, "err", err)
		}
	}
}

func (c *Claim) lost(err error) {
	c.mu.Lock()
	first := c.err == nil
	if first {
		c.err = fmt.Errorf("session %s: %w", c.s.id, err)
	}
	err = c.err
	c.mu.Unlock()
	if first && c.onLost != nil {
		c.onLost(err)
	}
}

// appendFenced writes with the claim's lease, with the session's mu held.
func (c *Claim) appendFenced(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) error {
	c.mu.Lock()
	lease, lostErr := c.lease, c.err
	c.mu.Unlock()
	if lostErr != nil {
		return lostErr
	}
	err := c.leaser.AppendFenced(ctx, id, lease, expectSeq, events...)
	if errors.Is(err, cairn.ErrLeaseLost) {
		go c.lost(err)
	}
	return err
}

// Release stops renewing, gives the lease (or the lock) up and returns the
// session's writes to plain appends. It returns nil if the lease was lost
// meanwhile (nothing is left to give up). It is safe to call twice.
func (c *Claim) Release(ctx context.Context) error {
	var err error
	c.once.Do(func() {
		c.s.mu.Lock()
		if c.s.claim == c {
			c.s.claim = nil
		}
		c.s.mu.Unlock()
		err = c.release(ctx)
	})
	return err
}

func (c *Claim) release(ctx context.Context) error {
	close(c.stop)
	<-c.done
	if c.lock != nil {
		defer c.lock.unlock() // after the lease: the next holder finds it released
	}
	if c.leaser == nil || c.Err() != nil {
		return nil
	}
	c.mu.Lock()
	lease := c.lease
	c.mu.Unlock()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appendTimeout)
	defer cancel()
	if err := c.leaser.Release(rctx, lease); err != nil && !errors.Is(err, cairn.ErrLeaseLost) && !errors.Is(err, cairn.ErrNotFound) {
		return fmt.Errorf("release session %s: %w", c.s.id, err)
	}
	return nil
}

// checkClaim reports whether the session's holder may act now (see
// Claim.Check): nil when the session has no claim.
func (s *Session) checkClaim() error {
	s.mu.Lock()
	c := s.claim
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Check()
}

// storeAppend is the session's write: fenced while a claim with a lease
// is held, a plain Append otherwise. With s.mu held.
func (s *Session) storeAppend(ctx context.Context, expectSeq int64, events ...cairn.Event) error {
	ctx, span := s.agent.telemetry().StartAppend(ctx)
	var err error
	if c := s.claim; c != nil && c.leaser != nil {
		err = c.appendFenced(ctx, s.id, expectSeq, events...)
	} else {
		err = s.store.Append(ctx, s.id, expectSeq, events...)
	}
	if span.IsRecording() {
		telemetry.EndAppend(span, telemetry.Backend(s.store), s.id, expectSeq+1, expectSeq+int64(len(events)), kinds(events), err)
	} else {
		span.End()
	}
	return err
}

func kinds(events []cairn.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = string(e.Kind)
	}
	return out
}
