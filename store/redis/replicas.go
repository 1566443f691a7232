package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
)

// ReplicaError is the error of an append that the master applied but that
// fewer replicas than the URL's min_replicas acknowledged within
// replica_timeout (Redis WAIT). It wraps cairn.ErrUnavailable, so a run
// degrades or fails by its on_error rule, as for an outage; the events
// are on the master, and a failover now could lose them. Sending the same
// append again is safe: it answers as a retry (nothing written twice) and
// waits for the replicas again.
type ReplicaError struct {
	Want, Got int
	Timeout   time.Duration
}

func (e *ReplicaError) Error() string {
	return fmt.Sprintf("%d of the %d replicas asked for (min_replicas) acknowledged the write within %s: it is on the master only, and a failover now could lose it", e.Got, e.Want, e.Timeout)
}

// Unwrap returns cairn.ErrUnavailable.
func (e *ReplicaError) Unwrap() error { return cairn.ErrUnavailable }

// barrierScript rewrites a session's last_seq with its own value: a write
// that changes nothing but reaches the replicas after every earlier write
// of the master, so that a WAIT on the same connection waits for them.
//
//	KEYS: meta
var barrierScript = goredis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'last_seq')
if v then redis.call('HSET', KEYS[1], 'last_seq', v) end
return 'OK'
`)

// runAppend runs script, the script of Append or AppendFenced, and returns
// its reply. With min_replicas it runs the script and WAIT in one pipeline
// on the session's master, so that WAIT counts the replicas that hold this
// very write; an OK (or DONE: a retry of an append already applied) that
// too few replicas acknowledged becomes a *ReplicaError.
func (s *Store) runAppend(ctx context.Context, id string, script *goredis.Script, args []any) (string, error) {
	keys := s.scriptKeys(id)
	if s.minReplicas == 0 && s.split {
		return script.Run(ctx, s.client, keys, args...).Text()
	}
	if s.minReplicas == 0 {
		c := &scriptCall{script: script, keys: keys, args: args}
		if err := s.queue.Do(ctx, c); err != nil {
			return "", err
		}
		return c.res, c.err
	}
	res, got, err := s.waited(ctx, id, script, keys, args)
	if err != nil {
		return "", err
	}
	if res == replyDone {
		// The write was an earlier call's, perhaps on another connection:
		// WAIT counts this connection's writes, so make one after it.
		if _, got, err = s.waited(ctx, id, barrierScript, []string{s.metaKey(id)}, nil); err != nil {
			return "", err
		}
	}
	if (res == replyOK || res == replyDone) && got < s.minReplicas {
		return "", &ReplicaError{Want: s.minReplicas, Got: got, Timeout: s.replicaTimeout}
	}
	return res, nil
}

// replicated waits, after an append whose reply was lost and that the
// store found applied, until min_replicas replicas hold it.
func (s *Store) replicated(ctx context.Context, id string) error {
	if s.minReplicas == 0 {
		return nil
	}
	_, got, err := s.waited(ctx, id, barrierScript, []string{s.metaKey(id)}, nil)
	if err != nil {
		return err
	}
	if got < s.minReplicas {
		return &ReplicaError{Want: s.minReplicas, Got: got, Timeout: s.replicaTimeout}
	}
	return nil
}

// waited runs script and then WAIT in one pipeline, on one connection to
// the master of the session's slot, and returns the script's reply and
// the number of replicas WAIT counted. A MOVED or ASK reply (the slot has
// a new master since the cluster client last looked) reloads the slots and
// tries again: Redis refused the script, nothing was applied.
func (s *Store) waited(ctx context.Context, id string, script *goredis.Script, keys []string, args []any) (string, int, error) {
	for try := 0; ; try++ {
		node, err := s.master(ctx, id)
		if err != nil {
			return "", 0, err
		}
		res, got, err := waitOn(ctx, node, script, keys, args, s.minReplicas, s.replicaTimeout)
		if try < 3 && (movedReply(err) || redirectedAway(err)) {
			if cc, ok := s.client.(*goredis.ClusterClient); ok {
				cc.ReloadState(ctx)
				if !pauseFor(ctx, minBackoff) {
					return "", 0, err
				}
				continue
			}
		}
		return res, got, err
	}
}

// waitOn is one try of waited on node.
func waitOn(ctx context.Context, node *goredis.Client, script *goredis.Script, keys []string, args []any, n int, timeout time.Duration) (string, int, error) {
	run := func(load bool) (*goredis.Cmd, *goredis.Cmd, error) {
		var sc *goredis.Cmd
		var wc *goredis.Cmd
		_, err := node.Pipelined(ctx, func(p goredis.Pipeliner) error {
			if load {
				sc = script.Eval(ctx, p, keys, args...)
			} else {
				sc = script.EvalSha(ctx, p, keys, args...)
			}
			wc = p.Do(ctx, "wait", n, timeout.Milliseconds())
			return nil
		})
		return sc, wc, err
	}
	sc, wc, err := run(false)
	if err != nil && goredis.HasErrorPrefix(sc.Err(), "NOSCRIPT") {
		sc, wc, err = run(true) // the script cache was empty: nothing ran
	}
	if err != nil {
		if sc.Err() != nil {
			return "", 0, sc.Err()
		}
		return "", 0, err
	}
	res, err := sc.Text()
	if err != nil {
		return "", 0, err
	}
	got, err := wc.Int()
	if err != nil {
		return "", 0, fmt.Errorf("wait for %d replicas: %w", n, err)
	}
	return res, got, nil
}

// master returns a client on the master of the session's slot: the
// cluster client's node for it, or the single-server client itself.
func (s *Store) master(ctx context.Context, id string) (*goredis.Client, error) {
	switch c := s.client.(type) {
	case *goredis.ClusterClient:
		return c.MasterForKey(ctx, s.metaKey(id))
	case *goredis.Client:
		return c, nil
	}
	return nil, errors.New("min_replicas needs a client that Open made")
}

// movedReply reports whether err is a MOVED or ASK reply.
func movedReply(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
}

// redirectedAway reports whether err says the node addressed cannot serve
// the slot now without having run anything: it could not be dialed, or it
// is a replica (READONLY), as a killed master's address is, or becomes.
func redirectedAway(err error) bool {
	return err != nil && (!mayHaveApplied(err) && outage(err) || strings.HasPrefix(err.Error(), "READONLY "))
}
