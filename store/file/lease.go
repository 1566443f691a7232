//go:build linux || darwin

package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// leaseFormat names the form of lease.json.
const leaseFormat = "cairn.file.lease"

// leaseFile is the JSON form of lease.json. Token is the last token handed
// out for the session and stays after Release (which empties Holder), so
// that the next one is larger. Takeovers is cairn.Lease's, 0 when absent.
type leaseFile struct {
	Format    string    `json:"format"`
	Version   int       `json:"version"`
	Session   string    `json:"session"`
	Holder    string    `json:"holder"` // empty: released
	Token     int64     `json:"token"`
	Expires   time.Time `json:"expires,omitzero"`
	Takeovers int64     `json:"takeovers,omitempty"`
}

// errBadLease marks a lease.json the store cannot read. It is never taken
// for a free lease: the session's lease calls and fenced appends fail
// until the file is removed.
var errBadLease = errors.New("damaged lease file")

// live reports whether the lease holds the session at now.
func (l leaseFile) live(now time.Time) bool { return l.Holder != "" && now.Before(l.Expires) }

// holds reports whether lease is still this one: not released, and the
// same session, token and holder.
func (l leaseFile) holds(id string, lease cairn.Lease) bool {
	return l.Holder != "" && lease.Session == id && lease.Token == l.Token && lease.Holder == l.Holder
}

func (l leaseFile) lease() cairn.Lease {
	return cairn.Lease{Session: l.Session, Holder: l.Holder, Token: l.Token, Expires: l.Expires, Takeovers: l.Takeovers}
}

// nextToken returns the token to hand out after last: last + 1, or the
// machine's clock in microseconds when that is larger. The clock makes a
// session deleted and created again (which starts without lease.json)
// hand out tokens above its earlier self's, unless the clock went back.
func nextToken(last int64) int64 {
	return max(last+1, time.Now().UnixMicro())
}

// Acquire implements cairn.Leaser.
//
// A session's lease lives in its folder, in lease.json, which is only read
// and replaced under the session's exclusive file lock (CurrentLease reads
// it under the shared one). Each lease call and each fenced append is
// therefore one atomic step between every process that shares the folder,
// and a lease change is durable before it is acknowledged: the new
// lease.json is written to a temporary file, fsynced, renamed over the old
// one and the session's folder fsynced. A crash leaves the old file or the
// new one, whole, and never loses a token that was handed out.
//
// Only AppendFenced reads lease.json on the append path; a plain Append
// does not look at it. Nothing of a lease is cached, so a change made by
// another process is seen at once.
func (s *Store) Acquire(ctx context.Context, id, holder string, ttl time.Duration) (cairn.Lease, error) {
	return s.take(ctx, "acquire", id, holder, ttl, false)
}

// Takeover implements cairn.Leaser.
func (s *Store) Takeover(ctx context.Context, id, holder string, ttl time.Duration) (cairn.Lease, error) {
	return s.take(ctx, "takeover", id, holder, ttl, true)
}

// take gives the session's lease to holder with a new token, unless
// another lease is live and force is not set.
func (s *Store) take(ctx context.Context, op, id, holder string, ttl time.Duration, force bool) (cairn.Lease, error) {
	if err := s.begin(); err != nil {
		return cairn.Lease{}, err
	}
	defer s.ops.RUnlock()
	if err := driver.CheckLease(id, holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	var lease cairn.Lease
	err := s.withLease(ctx, id, true, func(cur leaseFile, now time.Time) (*leaseFile, error) {
		if cur.live(now) && !force {
			return nil, &cairn.LeaseHeldError{Session: id, Holder: cur.Holder, Expires: cur.Expires}
		}
		next := leaseFile{Format: leaseFormat, Version: 1, Session: id, Holder: holder,
			Token: nextToken(cur.Token), Expires: now.Add(ttl), Takeovers: cur.Takeovers}
		if cur.Holder != "" {
			next.Takeovers++ // its holder never released it
		}
		lease = next.lease()
		return &next, nil
	})
	if err != nil {
		if _, ok := errors.AsType[*cairn.LeaseHeldError](err); ok {
			return cairn.Lease{}, err
		}
		return cairn.Lease{}, fmt.Errorf("%s %s: %w", op, id, err)
	}
	return lease, nil
}

// Renew implements cairn.Leaser.
func (s *Store) Renew(ctx context.Context, lease cairn.Lease, ttl time.Duration) (cairn.Lease, error) {
	if err := s.begin(); err != nil {
		return cairn.Lease{}, err
	}
	defer s.ops.RUnlock()
	id := lease.Session
	if err := driver.CheckLease(id, lease.Holder, ttl); err != nil {
		return cairn.Lease{}, err
	}
	var out cairn.Lease
	err := s.withLease(ctx, id, true, func(cur leaseFile, now time.Time) (*leaseFile, error) {
		if !cur.holds(id, lease) {
			return nil, cairn.ErrLeaseLost
		}
		cur.Expires = now.Add(ttl)
		out = cur.lease()
		return &cur, nil
	})
	if err != nil {
		return cairn.Lease{}, fmt.Errorf("renew %s: %w", id, err)
	}
	return out, nil
}

// Release implements cairn.Leaser. The token stays in lease.json, so the
// next Acquire hands out a larger one.
func (s *Store) Release(ctx context.Context, lease cairn.Lease) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.ops.RUnlock()
	id := lease.Session
	if err := cairn.ValidateID(id); err != nil {
		return err
	}
	err := s.withLease(ctx, id, true, func(cur leaseFile, now time.Time) (*leaseFile, error) {
		if !cur.holds(id, lease) {
			return nil, cairn.ErrLeaseLost
		}
		cur.Holder, cur.Expires = "", time.Time{}
		return &cur, nil
	})
	if err != nil {
		return fmt.Errorf("release %s: %w", id, err)
	}
	return nil
}

// CurrentLease implements cairn.Leaser. It reads lease.json under the
// session's shared lock.
func (s *Store) CurrentLease(ctx context.Context, id string) (cairn.Lease, error) {
	if err := s.begin(); err != nil {
		return cairn.Lease{}, err
	}
	defer s.ops.RUnlock()
	if err := cairn.ValidateID(id); err != nil {
		return cairn.Lease{}, err
	}
	out := cairn.Lease{Session: id}
	err := s.withLease(ctx, id, false, func(cur leaseFile, now time.Time) (*leaseFile, error) {
		out.Takeovers = cur.Takeovers
		if cur.live(now) {
			out = cur.lease()
		}
		return nil, nil
	})
	if err != nil {
		return cairn.Lease{}, fmt.Errorf("lease of %s: %w", id, err)
	}
	return out, nil
}

// AppendFenced implements cairn.Leaser: Append, with the lease checked
// under the same exclusive lock as the expected seq, before the log's
// write and the journal's commit.
func (s *Store) AppendFenced(ctx context.Context, id string, lease cairn.Lease, expectSeq int64, events ...cairn.Event) error {
	return s.appendChecked(ctx, id, expectSeq, events, &lease)
}

// fenced checks, with the session's exclusive lock held, that lease is
// still the session's.
func (s *Store) fenced(id string, lease cairn.Lease) error {
	cur, err := s.readLease(id)
	if err != nil {
		return err
	}
	if !cur.holds(id, lease) {
		return cairn.ErrLeaseLost
	}
	return nil
}

// withLease runs fn on the lease of the live session id, with the
// session's lock held (exclusive when fn may change the lease). When fn
// returns a lease file, it replaces lease.json durably before the lock is
// released.
func (s *Store) withLease(ctx context.Context, id string, exclusive bool,
	fn func(cur leaseFile, now time.Time) (*leaseFile, error)) error {
	return s.withSession(ctx, id, exclusive, func(_ *session, now time.Time) error {
		cur, err := s.readLease(id)
		if err != nil {
			return err
		}
		next, err := fn(cur, now)
		if err != nil || next == nil {
			return err
		}
		data, err := json.Marshal(next)
		if err != nil {
			return fmt.Errorf("encode %s: %w", leaseName, err)
		}
		return s.writeFile(id+"/"+leaseName, data, true)
	})
}

// readLease reads the session's lease.json, with its lock held. A session
// that never had a lease has none: the zero leaseFile. A file that cannot
// be read or decoded is an error wrapping errBadLease that names it.
func (s *Store) readLease(id string) (leaseFile, error) {
	data, err := s.ns.ReadFile(id + "/" + leaseName)
	if errors.Is(err, fs.ErrNotExist) {
		return leaseFile{}, nil
	}
	if err != nil {
		if _, ok := errors.AsType[*fs.PathError](err); ok {
			return leaseFile{}, err // it names the file
		}
		return leaseFile{}, fmt.Errorf("read lease file %s: %w", s.leasePath(id), err)
	}
	l, err := parseLease(data, id)
	if err != nil {
		return leaseFile{}, fmt.Errorf("%w %s (%v): no lease of the session can be taken or checked until it is removed",
			errBadLease, s.leasePath(id), err)
	}
	return l, nil
}

// parseLease decodes and checks the lease file of session id.
func parseLease(data []byte, id string) (leaseFile, error) {
	var l leaseFile
	if err := json.Unmarshal(data, &l); err != nil {
		return leaseFile{}, err
	}
	switch {
	case l.Format != leaseFormat || l.Version != 1:
		return leaseFile{}, fmt.Errorf("not a lease in format %s version 1", leaseFormat)
	case l.Session != id:
		return leaseFile{}, fmt.Errorf("the lease of session %q, not %q", l.Session, id)
	case l.Token <= 0:
		return leaseFile{}, fmt.Errorf("token %d, want more than 0", l.Token)
	case l.Holder != "" && l.Expires.IsZero():
		return leaseFile{}, fmt.Errorf("holder %q without an expiry", l.Holder)
	}
	return l, nil
}

// leasePath returns the path of the session's lease file, for errors.
func (s *Store) leasePath(id string) string {
	return filepath.Join(s.root.Name(), s.opts.Namespace, id, leaseName)
}

// CurrentLeases implements cairn.Leaser.
func (s *Store) CurrentLeases(ctx context.Context, ids []string) (map[string]cairn.Lease, error) {
	return driver.CurrentLeases(ctx, s, ids)
}
