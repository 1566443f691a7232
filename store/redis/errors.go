package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
)

// ErrClusterNode is returned by Open for a standalone URL that reaches a
// Redis Cluster node, and wrapped by the error of a call that meets a
// MOVED, ASK or CROSSSLOT reply: the store was given a single-server
// client where it needs a cluster client.
var ErrClusterNode = errors.New("a Redis Cluster needs the cluster URL form: redis://HOST:PORT?addr=HOST2:PORT2&addr=HOST3:PORT3 (the addresses of some of its nodes), or redis://HOST:PORT?cluster=true")

// unavailable makes *errp, the error of a store method, wrap
// cairn.ErrUnavailable when it is an outage, and ErrClusterNode when it
// is a reply that only a cluster node gives.
func unavailable(errp *error) {
	err := *errp
	if outage(err) && !errors.Is(err, cairn.ErrUnavailable) {
		*errp = fmt.Errorf("%w: %w", cairn.ErrUnavailable, err)
	} else if clusterReply(err) && !errors.Is(err, ErrClusterNode) {
		*errp = fmt.Errorf("%w (the server is a Redis Cluster node: %w)", err, ErrClusterNode)
	}
}

// clusterReply reports whether err is a reply only a Redis Cluster node
// gives to a client that does not follow the cluster's slots: MOVED, ASK,
// CROSSSLOT, or the EXECABORT of a transaction one of whose commands got
// such a reply.
func clusterReply(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"MOVED ", "ASK ", "CROSSSLOT ", "EXECABORT "} {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, ": "+p) {
			return true
		}
	}
	return false
}

// lostReplyError is the error a cluster node's hook returns for a script
// whose reply was lost (lostReplyHook). It hides its cause from go-redis,
// which would send the script again, and the store takes it for the outage
// it is.
type lostReplyError struct{ err error }

func (e *lostReplyError) Error() string { return e.err.Error() }

// lostReplyHook is added to every node client of a cluster client that
// Open makes. A cluster client sends a command again when its reply was
// lost (its redirect loop retries on another try whatever go-redis's
// MaxRetries says); for a script that may have been applied, the store's
// change and probe must decide instead, so the hook turns such an error
// into a *lostReplyError, which go-redis does not retry.
type lostReplyHook struct{}

func (lostReplyHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (lostReplyHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

func (lostReplyHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil || ctx.Err() != nil {
			return err
		}
		switch cmd.Name() {
		case "evalsha", "eval":
			if outage(err) && mayHaveApplied(err) {
				return &lostReplyError{err: err}
			}
		}
		return err
	}
}

// outage reports whether err says that Redis could not be reached or did
// not answer: an error of the network or a connection the server closed
// (io.EOF), no connection free in the pool in time, or an answer that
// says the server cannot serve anyone now (LOADING its dataset, MASTERDOWN,
// TRYAGAIN, CLUSTERDOWN, its maximum number of clients reached). Every
// other answer, such as OOM (maxmemory reached), WRONGTYPE or NOPERM, is
// not an outage.
func outage(err error) bool {
	if err == nil || errors.Is(err, cairn.ErrClosed) {
		return false
	}
	if _, ok := errors.AsType[*ReplicaError](err); ok {
		return false // the write was applied: a retry or a probe changes nothing
	}
	if _, ok := errors.AsType[*lostReplyError](err); ok {
		return true
	}
	return errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, goredis.ErrPoolTimeout) ||
		errors.Is(err, goredis.ErrPoolExhausted) ||
		goredis.IsLoadingError(err) ||
		goredis.IsMasterDownError(err) ||
		goredis.IsTryAgainError(err) ||
		goredis.IsClusterDownError(err) ||
		goredis.IsMaxClientsError(err) ||
		cairn.IsUnavailable(err)
}

// maxRetries is how many times the store sends a call again (or probes for
// it) after an outage, backing off from minBackoff to maxBackoff between
// tries, as go-redis does by default.
const (
	maxRetries = 3
	minBackoff = 8 * time.Millisecond
	maxBackoff = 512 * time.Millisecond
)

// retry runs call, and again while it fails with an outage (up to
// maxRetries more times, never past ctx), for reads and writes that may be
// applied twice.
func retry[T any](ctx context.Context, call func(context.Context) (T, error)) (T, error) {
	return again(ctx, call, func(error) bool { return true })
}

// again runs call, and again while it fails with an outage for which more
// says to go on.
func again[T any](ctx context.Context, call func(context.Context) (T, error), more func(error) bool) (v T, err error) {
	pause := minBackoff
	for try := 0; ; try++ {
		v, err = call(ctx)
		if err == nil || try == maxRetries || !outage(err) || !more(err) || ctx.Err() != nil {
			return v, err
		}
		if !pauseFor(ctx, pause) {
			return v, err
		}
		pause = min(2*pause, maxBackoff)
	}
}

// pauseFor waits d, and reports false when ctx ends first.
func pauseFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// change runs do, a script that changes the store, sent again only while
// it fails before reaching Redis. When it fails in a way that may have
// left it applied, probe asks for the evidence (its events at their seqs,
// or its nonce noted by the script with its answer: see callHelpers), up
// to maxRetries times: found, its answer is the call's; not found, the
// call's outcome is unknown (an error wrapping cairn.ErrUnavailable). Why
// such a write is never sent again: docs/STORES.md, "The Redis store",
// Calls whose reply is lost.
func change[T any](ctx context.Context, do func(context.Context) (T, error), probe func(context.Context) (T, bool, error)) (T, error) {
	var zero T
	v, err := again(ctx, do, func(err error) bool { return !mayHaveApplied(err) })
	if err == nil || !outage(err) || !mayHaveApplied(err) {
		return v, err
	}
	lost := err
	pause := minBackoff
	for range maxRetries {
		if !pauseFor(ctx, pause) {
			break
		}
		pause = min(2*pause, maxBackoff)
		v, found, err := probe(ctx)
		switch {
		case err == nil && found:
			return v, nil
		case err == nil:
			return zero, fmt.Errorf("%w: the reply was lost (%v), and the store holds no sign that the call took effect, nor that it did not", cairn.ErrUnavailable, lost)
		case !outage(err):
			return zero, fmt.Errorf("%w: the reply was lost (%v), and asking whether the call took effect failed: %v", cairn.ErrUnavailable, lost, err)
		}
	}
	return zero, lost
}

// mayHaveApplied reports whether a call that failed with the outage err
// may have reached Redis and been applied: anything but a connection that
// could not be made or taken from the pool, or an answer of the server
// that refused to serve it (LOADING, MASTERDOWN, …).
func mayHaveApplied(err error) bool {
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return false
	}
	if _, ok := errors.AsType[goredis.Error](err); ok {
		return false
	}
	return !errors.Is(err, goredis.ErrPoolTimeout) && !errors.Is(err, goredis.ErrPoolExhausted)
}
