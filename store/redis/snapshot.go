package redis

import (
	"context"
	"fmt"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
)

var _ cairn.Snapshotter = (*Store)(nil)

// A session's snapshot lives in its meta hash, in the fields snapshot_seq
// and snapshot: it shares the key's slot, its TTL (so it expires with the
// session, and every append that moves the session's expiry moves it
// too) and its fate (Delete, Sweep and Create over an expired session
// delete the key). No read of the meta but LoadSnapshot's asks for those
// fields, so a large snapshot costs nothing to the other calls.

// putSnapshotScript stores a snapshot in a live session's meta unless the
// meta holds one of a higher seq.
//
//	KEYS: meta
//	ARGV: now, seq, data
//	returns "OK" or "NOTFOUND"
var putSnapshotScript = goredis.NewScript(luaHelpers + `
local cur = redis.call('HMGET', KEYS[1], 'expires_at', 'last_seq', 'snapshot_seq')
if not cur[2] or expired(cur[1], ARGV[1]) then return 'NOTFOUND' end
local held = cur[3]
if held and (#held > #ARGV[2] or (#held == #ARGV[2] and held > ARGV[2])) then
  return 'OK' -- a later snapshot is there: this one is dropped
end
redis.call('HSET', KEYS[1], 'snapshot_seq', ARGV[2], 'snapshot', ARGV[3])
return 'OK'
`)

// dropSnapshotScript removes a live session's snapshot.
//
//	KEYS: meta
//	ARGV: now
//	returns "OK" or "NOTFOUND"
var dropSnapshotScript = goredis.NewScript(luaHelpers + `
local cur = redis.call('HMGET', KEYS[1], 'expires_at', 'last_seq')
if not cur[2] or expired(cur[1], ARGV[1]) then return 'NOTFOUND' end
redis.call('HDEL', KEYS[1], 'snapshot_seq', 'snapshot')
return 'OK'
`)

// PutSnapshot implements cairn.Snapshotter: one script, which checks that
// the session is live and keeps the snapshot of the higher seq, and
// touches neither the session's updated time nor its TTL. A put is the
// same whether it runs once or again, so one whose reply was lost is sent
// again.
func (s *Store) PutSnapshot(ctx context.Context, id string, snap cairn.Snapshot) (err error) {
	defer unavailable(&err)
	if err := s.guard.Snapshot(id, snap, 0); err != nil {
		return err
	}
	now := nanos(s.now())
	res, err := retry(ctx, func(ctx context.Context) (string, error) {
		return putSnapshotScript.Run(ctx, s.client, []string{s.metaKey(id)}, now, snap.Seq, snap.Data).Text()
	})
	return snapshotReply("put snapshot", id, res, err)
}

// LoadSnapshot implements cairn.Snapshotter: one HMGET of the meta.
func (s *Store) LoadSnapshot(ctx context.Context, id string) (_ *cairn.Snapshot, err error) {
	defer unavailable(&err)
	if err := s.guard.Session(id); err != nil {
		return nil, err
	}
	vals, err := retry(ctx, func(ctx context.Context) ([]any, error) {
		return s.client.HMGet(ctx, s.metaKey(id), "expires_at", "last_seq", "snapshot_seq", "snapshot").Result()
	})
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", id, err)
	}
	str := make([]string, len(vals))
	for i, v := range vals {
		str[i], _ = v.(string)
	}
	if vals[1] == nil {
		return nil, fmt.Errorf("load snapshot %s: %w", id, cairn.ErrNotFound)
	}
	exp, err := strconv.ParseInt(str[0], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: corrupt meta field expires_at: %v", id, err)
	}
	if exp != 0 && s.now().UnixNano() >= exp {
		return nil, fmt.Errorf("load snapshot %s: %w", id, cairn.ErrNotFound)
	}
	if vals[2] == nil || vals[3] == nil {
		return nil, nil
	}
	seq, err := strconv.ParseInt(str[2], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: corrupt meta field snapshot_seq: %v", id, err)
	}
	return &cairn.Snapshot{Seq: seq, Data: []byte(str[3])}, nil
}

// DropSnapshot implements cairn.Snapshotter: one script, sent again when
// its reply is lost (dropping twice is dropping once).
func (s *Store) DropSnapshot(ctx context.Context, id string) (err error) {
	defer unavailable(&err)
	if err := s.guard.Session(id); err != nil {
		return err
	}
	now := nanos(s.now())
	res, err := retry(ctx, func(ctx context.Context) (string, error) {
		return dropSnapshotScript.Run(ctx, s.client, []string{s.metaKey(id)}, now).Text()
	})
	return snapshotReply("drop snapshot", id, res, err)
}

// snapshotReply turns a snapshot script's reply into PutSnapshot's or
// DropSnapshot's error.
func snapshotReply(op, id, res string, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("%s %s: %w", op, id, err)
	case res == replyOK:
		return nil
	case res == replyNotFound:
		return fmt.Errorf("%s %s: %w", op, id, cairn.ErrNotFound)
	}
	return fmt.Errorf("%s %s: unexpected script reply %q", op, id, res)
}
