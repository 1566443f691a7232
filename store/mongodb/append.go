package mongodb

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// Append implements cairn.Store without a transaction, in two round trips:
//
//  1. insert the event documents, ordered; the unique index on (session,
//     seq) lets one writer hold each position, so a duplicate means another
//     writer got there first;
//  2. compare-and-set the session document from last_seq expectSeq to the
//     new last seq, with the info fields: the commit point.
//
// If the commit matches nothing, the documents of step 1 are removed (by
// the token of this call) and the error is ErrNotFound or ErrConflict.
// Readers only return events up to the session's last_seq, so documents of
// an uncommitted or failed append are never seen. See the package
// documentation for the recovery rule of a writer that died between 1 and 2.
func (s *Store) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) (err error) {
	defer unavailable(&err)
	return s.append(ctx, id, nil, expectSeq, events)
}

// append checks events and makes their documents, then runs attempts of
// the insert and commit (appendOnce), under the lease if one is given,
// until one writes them, finds them already written (errRetried), or fails
// for a reason that another attempt would meet too. The guard's and the
// context's errors come back as they are; an attempt's are wrapped with
// the operation, but for a plain append's ErrConflict and ErrNotFound.
func (s *Store) append(ctx context.Context, id string, lease *cairn.Lease, expectSeq int64, events []cairn.Event) error {
	events, err := s.guard.Append(s.opts.Limits, id, expectSeq, events)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	docs, err := eventDocs(id, events)
	if err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	for attempt := 1; ; attempt++ {
		err := s.appendOnce(ctx, id, lease, expectSeq, events, docs)
		if errors.Is(err, errRetried) {
			return nil
		}
		if again(err) && attempt < maxAttempts {
			continue // strays removed, or a fence raised: try again
		}
		if again(err) {
			err = fmt.Errorf("%w: %w %d times", cairn.ErrUnavailable, err, attempt)
		}
		if err != nil && (lease != nil || !isSentinel(err)) {
			return fmt.Errorf("append %s: %w", id, err)
		}
		return err
	}
}

// maxAttempts bounds the inserts and commits of one Append call that
// meets stale uncommitted events or a fence raised after it began.
const maxAttempts = 3

// again reports whether an attempt of an append wrote nothing for a reason
// that another attempt may not meet: strays removed (errStrays) or a fence
// raised after the attempt began (errFenced).
func again(err error) bool {
	return errors.Is(err, errStrays) || errors.Is(err, errFenced)
}

// errStrays says that an insert met event documents left above the
// session's last seq by a dead writer, and that they have been removed.
var errStrays = errors.New("stale uncommitted events removed")

// errRetried says that the session already holds the events of an append
// at their seqs, exactly: the append was sent again after its reply was
// lost, and is already done.
var errRetried = errors.New("the events are already the session's")

// errFenced says that an append's commit found the session at its expected
// seq but behind a fence raised after the append began (a lease taken, an
// uncommitted append cleared, a Create): nothing was written, and an
// attempt that begins now can commit.
var errFenced = errors.New("the session was fenced after the append began")

func isSentinel(err error) bool {
	return errors.Is(err, cairn.ErrConflict) || errors.Is(err, cairn.ErrNotFound)
}

// appendOnce runs one insert and commit. With a lease, it checks the
// lease first (the commit checks it again: its filter holds the lease's
// token), clears what a position already held by a fenced writer holds
// (clearFenced), records the lease's expiry with the commit, and tells a
// lost lease from a conflict when the commit matches nothing. A commit
// adds the events' text to the search statistics.
func (s *Store) appendOnce(ctx context.Context, id string, lease *cairn.Lease, expectSeq int64, events []cairn.Event, docs []eventDoc) error {
	if lease != nil {
		if _, err := s.mine(ctx, id, *lease); err != nil {
			return err // checked again at the commit
		}
	}
	start := time.Now() // real clock: the fence and the stale rule
	token := newToken()
	written := bson.NewDateTimeFromTime(start)
	batch := make([]any, len(docs))
	for i := range docs {
		d := docs[i]
		d.Token, d.WrittenAt = token, written
		batch[i] = d
	}
	if _, err := s.events.InsertMany(ctx, batch, options.InsertMany().SetOrdered(true)); err != nil {
		s.discard(ctx, id, token)
		switch {
		case !mongo.IsDuplicateKeyError(err):
			return err
		case lease != nil:
			return s.clearFenced(ctx, id, expectSeq, docs)
		}
		return s.onDuplicate(ctx, id, expectSeq, docs)
	}
	now := s.now()
	filter := liveFilter(id, now)
	if lease != nil {
		filter = append(filter, bson.E{Key: "lease_token", Value: lease.Token})
	}
	filter = append(filter,
		bson.E{Key: "last_seq", Value: expectSeq},
		bson.E{Key: "fence", Value: bson.D{{Key: "$lt", Value: start.UnixNano()}}},
	)
	set, update, delta := s.commitFields(events, expectSeq+int64(len(events)), now)
	if lease != nil {
		hint := lease.Expires.UnixNano()
		if delta.Status != "" && delta.Status != cairn.StatusRunning {
			hint = 0 // the run ended: the lease is released next
		}
		set = append(set, bson.E{Key: "lease_expires_ns", Value: hint})
	}
	matched, err := s.commit(ctx, filter, set, update, delta)
	if err == nil && matched {
		s.addStats(indexed(docs))
		return nil
	}
	s.undo(ctx, id, token, expectSeq, err != nil)
	if err != nil {
		return err
	}
	if lease != nil {
		if _, err := s.mine(ctx, id, *lease); err != nil {
			return err
		}
	}
	return s.whyNot(ctx, id, expectSeq, start)
}

// undo removes the documents of an append whose commit did not match. A
// commit that failed with an error (a broken connection, a timeout) may
// have been applied, or be applied later: its request may still be on its
// way. Its documents keep the position meanwhile, so that no other commit
// races it (see hold), for LostAfter; then, while the session is still at
// expectSeq, the session's fence is raised, so that the commit can no
// longer land, and the documents are removed. If the session has moved
// on, the commit landed and the documents are its events: they stay.
func (s *Store) undo(ctx context.Context, id, token string, expectSeq int64, unknown bool) {
	if !unknown {
		s.discard(ctx, id, token)
		return
	}
	s.rememberLost(id, token) // if left, clear removes them after LostAfter
	s.later(func(ctx context.Context) error {
		// The fence is raised under a hold of the position (see hold):
		// while the session is still at expectSeq, the documents of the
		// lost commit are dead, and clear removes them as it takes the
		// hold. Another write of the session document at that moment (a
		// commit that their removal let through, a lease, a deletion)
		// would race the raise, and FerretDB can undo one of two such
		// writes.
		h, release, err := s.hold(ctx, id, bson.D{{Key: "last_seq", Value: expectSeq}}, nil)
		if errors.Is(err, cairn.ErrNotFound) {
			return nil // the commit landed: the documents are its events
		}
		if err != nil {
			return err
		}
		_, err = s.sessions.UpdateOne(ctx, h.at(bson.D{{Key: "_id", Value: id}}),
			bson.D{{Key: "$max", Value: bson.D{{Key: "fence", Value: time.Now().UnixNano()}}}})
		release(err)
		if err != nil {
			return err
		}
		return s.removeAppend(ctx, id, token)
	})
}

// LostAfter is how long a write whose reply was lost (a broken
// connection, a timeout) is taken to be on its way to the server: a
// request the network delays longer than that is taken as lost. The
// documents that keep its position (an append's events, a hold) stay that
// long before they are removed: on FerretDB, which writes an update as a
// whole document read before, a write that landed while another raced it
// would undo the other's.
const LostAfter = 3 * time.Second

// later runs f, a cleanup, after LostAfter, on a context of its own, in
// the background.
func (s *Store) later(f func(context.Context) error) {
	time.AfterFunc(LostAfter, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = f(ctx)
	})
}

// commit runs the compare-and-set of the session document. The first user
// message is set only on a session that has none: with a message in the
// batch it tries with first_message "" in the filter, then without.
func (s *Store) commit(ctx context.Context, filter, set, update bson.D, delta driver.InfoDelta) (bool, error) {
	if delta.HasMessage {
		f := append(filter[:len(filter):len(filter)], bson.E{Key: "first_message", Value: ""})
		st := append(set[:len(set):len(set)], bson.E{Key: "first_message", Value: delta.FirstMessage})
		res, err := s.sessions.UpdateOne(ctx, f, append(update[:len(update):len(update)], bson.E{Key: "$set", Value: st}))
		if err != nil || res.MatchedCount == 1 {
			return err == nil, err
		}
	}
	res, err := s.sessions.UpdateOne(ctx, filter, append(update, bson.E{Key: "$set", Value: set}))
	if err != nil {
		return false, err
	}
	return res.MatchedCount == 1, nil
}

// discard removes the event documents one Append call wrote, as a
// cleanup: it goes on after ctx ends. The token is kept for onDuplicate
// too: after a broken connection the removal may fail, or the insert reach
// the server after it.
func (s *Store) discard(ctx context.Context, id, token string) {
	s.remember(id, token)
	_ = cleanup(ctx, func(ctx context.Context) error { return s.removeAppend(ctx, id, token) })
}

// removeAppend removes the event documents of the Append call token.
func (s *Store) removeAppend(ctx context.Context, id, token string) error {
	_, err := s.events.DeleteMany(ctx, bson.D{{Key: "session", Value: id}, {Key: "token", Value: token}})
	return err
}

// maxLeftovers bounds the tokens kept by session in s.leftovers.
const maxLeftovers = 64

// leftover is the token of a failed call of this store, whose documents
// may be left, dead from after on.
type leftover struct {
	token string
	after time.Time
}

// remember keeps the token of a failed call of session id: its documents
// are dead at once.
func (s *Store) remember(id, token string) { s.keep(id, token, time.Now()) }

// rememberLost keeps the token of a call of session id whose write's reply
// was lost: its documents are dead after LostAfter.
func (s *Store) rememberLost(id, token string) { s.keep(id, token, time.Now().Add(LostAfter)) }

func (s *Store) keep(id, token string, after time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leftovers == nil {
		s.leftovers = map[string][]leftover{}
	}
	own := s.leftovers[id]
	if i := slices.IndexFunc(own, func(l leftover) bool { return l.token == token }); i >= 0 {
		own[i].after = later(own[i].after, after)
	} else {
		own = append(own, leftover{token, after})
	}
	s.leftovers[id] = own[max(0, len(own)-maxLeftovers):]
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ownLeftovers returns the tokens of session id's failed calls whose
// documents are dead now.
func (s *Store) ownLeftovers(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	now := time.Now()
	for _, l := range s.leftovers[id] {
		if !l.after.After(now) {
			out = append(out, l.token)
		}
	}
	return out
}

// forget drops tokens whose documents are gone.
func (s *Store) forget(id string, tokens []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rest := slices.DeleteFunc(s.leftovers[id], func(l leftover) bool { return slices.Contains(tokens, l.token) })
	if len(rest) == 0 {
		delete(s.leftovers, id)
	} else {
		s.leftovers[id] = rest
	}
}

// whyNot tells why the commit of an append that began at start (real
// clock) matched nothing, from the session document as it is now:
// ErrNotFound for a session that is missing, expired or being erased, or
// at expectSeq but created after start, or at 0 and not yet created;
// errFenced for one at expectSeq behind a fence raised since start;
// ErrConflict otherwise. Why each: docs/STORES.md, "The MongoDB store",
// Atomic appends without transactions.
func (s *Store) whyNot(ctx context.Context, id string, expectSeq int64, start time.Time) error {
	var doc struct {
		LastSeq int64 `bson:"last_seq"`
		Fence   int64 `bson:"fence"`
		Born    int64 `bson:"born"`
	}
	err := s.sessions.FindOne(ctx, liveFilter(id, s.now()),
		options.FindOne().SetProjection(bson.D{{Key: "last_seq", Value: 1}, {Key: "fence", Value: 1}, {Key: "born", Value: 1}})).Decode(&doc)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return cairn.ErrNotFound
	case err != nil:
		return err
	case doc.LastSeq != expectSeq:
		return cairn.ErrConflict
	case doc.Born >= start.UnixNano():
		return cairn.ErrNotFound
	case doc.Fence >= start.UnixNano():
		return errFenced
	case expectSeq > 0:
		return cairn.ErrConflict
	}
	return cairn.ErrNotFound
}

// onDuplicate handles an insert of docs that met a position already held.
// If the session moved past expectSeq (or is gone) that is a plain
// conflict (or ErrNotFound), unless the session holds docs exactly at
// their seqs (errRetried). If it has not, the position is held by another
// call that has not committed (see clear): when that holder is dead, its
// documents are removed and errStrays asks the caller to try again.
//
// While a live writer holds the position, the answer is not known yet:
// ErrConflict would name an append that has not happened, and may never
// happen. So onDuplicate waits, for at most CommitWait and never past
// ctx, until the holder commits (then the session has moved: a conflict,
// or a retry), gives up (its documents are removed: try again) or dies.
// If none of that happens in time, it returns an error that wraps
// cairn.ErrUnavailable: nothing of the call was written, but whether it
// conflicts is unknown.
func (s *Store) onDuplicate(ctx context.Context, id string, expectSeq int64, docs []eventDoc) error {
	w := newWaiter()
	for {
		doc, err := s.head(ctx, liveFilter(id, s.now()))
		if err != nil {
			return err
		}
		if doc.LastSeq != expectSeq {
			return s.retried(ctx, id, doc, expectSeq, docs)
		}
		free, err := s.clear(ctx, id, doc, "")
		if err != nil {
			return err
		}
		if free {
			return errStrays
		}
		if err := w.wait(ctx); err != nil {
			return fmt.Errorf("%w: seq %d is held by another call that has not committed: %w", cairn.ErrUnavailable, expectSeq+1, err)
		}
	}
}

// headDoc is what the position rules read of a session document.
type headDoc struct {
	LastSeq     int64  `bson:"last_seq"`
	Fence       int64  `bson:"fence"`
	Incarnation string `bson:"inc,omitempty"`
}

// at adds to filter, as atSeq does, that the session document is at h's
// last seq, and that it is the incarnation h was read from: a session
// deleted and created again since is another document, even at that seq.
func (h headDoc) at(filter bson.D) bson.D {
	f := atSeq(filter, h.LastSeq)
	if h.Incarnation != "" {
		f = append(f, bson.E{Key: "inc", Value: h.Incarnation})
	}
	return f
}

// head reads the last seq, the fence and the incarnation of the session
// document filter matches; ErrNotFound when none does.
func (s *Store) head(ctx context.Context, filter bson.D) (headDoc, error) {
	var doc headDoc
	err := s.sessions.FindOne(ctx, filter,
		options.FindOne().SetProjection(bson.D{{Key: "last_seq", Value: 1}, {Key: "fence", Value: 1}, {Key: "inc", Value: 1}})).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return doc, cairn.ErrNotFound
	}
	return doc, err
}

// clear looks at the documents above the last seq of session id (doc):
// an uncommitted append's events, or a hold (see hold). It reports free
// when none is left: there were none, or every one was dead and has been
// removed. A holder is dead when its documents are older than StaleAfter,
// were written by this store's own failed calls (see discard: the calls
// that wrote them have returned), or are an append's written before the
// session's fence (their commit cannot match; a hold commits nothing, so
// the fence says nothing of it). Before removing documents dead only by
// their age the session's fence is raised to now, so that no append that
// began before can still commit; the others are removed as they are, with
// no write of the session document, which on FerretDB could undo a commit
// that their removal let through while it was on its way.
//
// The documents of the token mine (a hold's own) are left out: neither in
// the way, nor removed.
func (s *Store) clear(ctx context.Context, id string, doc headDoc, mine string) (free bool, err error) {
	above := bson.D{{Key: "session", Value: id}, {Key: "seq", Value: bson.D{{Key: "$gt", Value: doc.LastSeq}}}}
	if mine != "" {
		above = append(above, bson.E{Key: "token", Value: bson.D{{Key: "$ne", Value: mine}}})
	}
	n, err := s.events.CountDocuments(ctx, above)
	if err != nil || n == 0 {
		return err == nil, err // the holder gave up: the position is free
	}
	wall := time.Now()
	own := s.ownLeftovers(id)
	stale := bson.D{{Key: "written_at", Value: bson.D{{Key: "$lt", Value: bson.NewDateTimeFromTime(wall.Add(-StaleAfter))}}}}
	// Dead for sure: an append's documents written before the fence, and
	// this store's own, whose calls have returned (and whose commit, if
	// its reply was lost, is taken as lost after LostAfter).
	sure := bson.A{
		bson.D{{Key: "written_at", Value: bson.D{{Key: "$lt", Value: fencedBefore(doc.Fence)}}}, {Key: "hold", Value: bson.D{{Key: "$ne", Value: true}}}},
	}
	if len(own) > 0 {
		sure = append(sure, bson.D{{Key: "token", Value: bson.D{{Key: "$in", Value: own}}}})
	}
	dead := append(slices.Clone(sure), stale)
	fresh, err := s.events.CountDocuments(ctx, append(slices.Clone(above), bson.E{Key: "$nor", Value: dead}))
	if err != nil || fresh > 0 {
		return false, err // another call is between its insert and its commit
	}
	// Stale documents only may belong to a writer merely paused, whose
	// commit could still come: the fence is raised first, so that it
	// cannot (see fenceStale). Documents dead for sure need no fence: no
	// write of the session document races a commit that their removal
	// lets through. Only documents stale now are counted: a document
	// written since the counts above is a live call's, never in the way.
	if _, err := s.events.DeleteMany(ctx, append(slices.Clone(above), bson.E{Key: "$or", Value: sure})); err != nil {
		return false, err
	}
	var paused []eventDoc
	cur, err := s.events.Find(ctx, append(slices.Clone(above), stale[0], bson.E{Key: "$nor", Value: sure}),
		options.Find().SetSort(bson.D{{Key: "seq", Value: 1}}).SetProjection(bson.D{{Key: "seq", Value: 1}, {Key: "token", Value: 1}}))
	if err == nil {
		err = cur.All(ctx, &paused)
	}
	if err != nil {
		return false, err
	}
	if len(paused) > 0 {
		fenced, done, err := s.fenceStale(ctx, id, doc, paused[0])
		if err != nil || !fenced {
			return false, err
		}
		defer done()
		if _, err := s.events.DeleteMany(ctx, append(slices.Clone(above), bson.E{Key: "$or", Value: dead})); err != nil {
			return false, err
		}
	}
	s.forget(id, own)
	return true, nil
}

// fenceStale raises the fence of session id (doc) to now, so that the
// writer of first, the lowest of the documents above the last seq that
// are dead only by their age, cannot commit should it be merely paused;
// it reports whether it did, and returns what to call once the dead
// documents are removed. It raises it while the position after the last
// seq is held, by first or by a hold of its own, and of the callers that
// find first there only the one that claims it raises; the others report
// false and look again (docs/STORES.md, "The MongoDB store", An append
// that meets an uncommitted one).
func (s *Store) fenceStale(ctx context.Context, id string, doc headDoc, first eventDoc) (bool, func(), error) {
	next := doc.LastSeq + 1
	done := func() {}
	hold := "" // the token of fenceStale's own hold, if it takes one
	if first.Seq == next {
		won, err := s.claim(ctx, "claim/"+id+"/"+first.Token)
		if err != nil || !won {
			return false, nil, err // another caller fences and removes it
		}
	} else {
		hold = "hold-" + newToken()
		_, err := s.events.InsertOne(ctx, eventDoc{Session: id, Seq: next, Token: hold, WrittenAt: bson.NewDateTimeFromTime(time.Now()), Hold: true})
		if mongo.IsDuplicateKeyError(err) {
			return false, nil, nil // the position was taken meanwhile: look again
		}
		if err != nil {
			return false, nil, err
		}
		done = func() { s.discard(ctx, id, hold) }
	}
	res, err := s.sessions.UpdateOne(ctx, atSeq(bson.D{{Key: "_id", Value: id}}, doc.LastSeq),
		bson.D{{Key: "$max", Value: bson.D{{Key: "fence", Value: time.Now().UnixNano()}}}})
	if err != nil {
		// The raise may still land: the position stays held (by first
		// and the claim, or by the hold, for LostAfter; see hold).
		if hold != "" {
			s.rememberLost(id, hold)
			s.later(func(ctx context.Context) error { return s.removeAppend(ctx, id, hold) })
		}
		return false, nil, err
	}
	if res.MatchedCount == 0 {
		done()
		return false, nil, nil // the session moved meanwhile: look again
	}
	return true, done, nil
}

// waiter paces the polls of a call that waits for another to finish, for
// at most CommitWait.
type waiter struct {
	deadline time.Time
	pause    time.Duration
}

func newWaiter() *waiter {
	return &waiter{deadline: time.Now().Add(CommitWait), pause: time.Millisecond}
}

// wait sleeps until the next poll; an error when CommitWait has passed or
// ctx ended.
func (w *waiter) wait(ctx context.Context) error {
	if !time.Now().Before(w.deadline) {
		return fmt.Errorf("not within %s", CommitWait)
	}
	if err := sleep(ctx, min(w.pause, time.Until(w.deadline))); err != nil {
		return err
	}
	w.pause = min(2*w.pause, 50*time.Millisecond)
	return nil
}

// hold takes the position after the last seq of session id, whose
// document must match cond, the way an append's first event document
// takes it, and returns what it read of the document (its last seq and
// incarnation: see headDoc.at) and the release of the hold. Every write of
// a live session's document other than a commit holds the position first,
// so that no append commits meanwhile (docs/STORES.md, "The MongoDB
// store", Holds). When a live append holds the position, hold takes the
// one after it and waits, at most CommitWait and never past ctx, for that
// append to commit or give up; then the error wraps cairn.ErrUnavailable.
// It returns ErrNotFound when no document matches cond. While it waits it
// calls quit, if not nil: an error from it ends the wait, and is hold's.
func (s *Store) hold(ctx context.Context, id string, cond bson.D, quit func(context.Context) error) (headDoc, func(error), error) {
	w := newWaiter()
	token := "hold-" + newToken()
	release := func() { s.discard(ctx, id, token) }
	lost := func() { // the holder's write failed: it may still land
		s.rememberLost(id, token)
		s.later(func(ctx context.Context) error { return s.removeAppend(ctx, id, token) })
	}
	take := func(seq int64) (bool, error) {
		_, err := s.events.InsertOne(ctx, eventDoc{Session: id, Seq: seq, Token: token, WrittenAt: bson.NewDateTimeFromTime(time.Now()), Hold: true})
		if mongo.IsDuplicateKeyError(err) {
			return false, nil
		}
		return err == nil, err
	}
	held := map[int64]bool{} // the positions this hold has taken
	seen := int64(-1)
	for {
		doc, err := s.head(ctx, append(bson.D{{Key: "_id", Value: id}}, cond...))
		if err != nil {
			release()
			return headDoc{}, nil, err
		}
		if doc.LastSeq < 0 {
			release()
			return doc, func(error) {}, nil // no append can commit: nothing to hold
		}
		// The position after the next first: an append that comes
		// meanwhile can take the next, commit, and then waits for the
		// hold, so appends cannot pass it again and again.
		next := doc.LastSeq + 1
		for _, p := range []int64{next + 1, next} {
			if !held[p] {
				if held[p], err = take(p); err != nil {
					release()
					return headDoc{}, nil, err
				}
			}
		}
		if held[next] {
			return doc, func(err error) {
				if err != nil && outage(err) {
					lost()
				} else {
					release()
				}
			}, nil
		}
		// Another call holds the next position: wait for it, unless it
		// is dead (then clear removes it).
		free, err := s.clear(ctx, id, doc, token)
		if err != nil {
			release()
			return headDoc{}, nil, err
		}
		if free {
			continue
		}
		if doc.LastSeq != seen {
			seen, w.pause = doc.LastSeq, time.Millisecond // the session moved on: look again soon
		}
		if quit != nil {
			if err := quit(ctx); err != nil {
				release()
				return headDoc{}, nil, err
			}
		}
		if err := w.wait(ctx); err != nil {
			release()
			return headDoc{}, nil, fmt.Errorf("%w: seq %d is held by another call that has not committed: %w", cairn.ErrUnavailable, next, err)
		}
	}
}

// fencedBefore returns the time before which an event document's
// written_at (whole milliseconds of its append's start) proves that the
// append began before fence (Unix ns, real clock): such an append cannot
// commit, since the commit requires fence < start.
func fencedBefore(fence int64) bson.DateTime {
	return bson.DateTime(max(fence-int64(time.Millisecond), 0) / int64(time.Millisecond))
}

// sleep waits for d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retried returns errRetried when session id, read as h, holds docs
// exactly at the seqs after expectSeq, whether or not others follow them,
// and ErrConflict otherwise. Events up to a session's last seq never
// change until it is deleted, so the documents read after h still tell,
// if the session is still h's incarnation when they have been read: it is
// read again, and a session deleted meanwhile (perhaps created again, with
// other events at those seqs) is ErrNotFound, the answer of a moment
// between. The envelopes are compared as stored: json.Marshal's bytes of
// the event, which keep its time to the nanosecond and in its zone.
func (s *Store) retried(ctx context.Context, id string, h headDoc, expectSeq int64, docs []eventDoc) error {
	end := expectSeq + int64(len(docs))
	if expectSeq < 0 || h.LastSeq < end {
		return cairn.ErrConflict
	}
	cur, err := s.events.Find(ctx,
		bson.D{{Key: "session", Value: id}, {Key: "seq", Value: bson.D{{Key: "$gt", Value: expectSeq}, {Key: "$lte", Value: end}}}},
		options.Find().SetSort(bson.D{{Key: "seq", Value: 1}}).SetProjection(bson.D{{Key: "seq", Value: 1}, {Key: "event", Value: 1}}))
	if err != nil {
		return err
	}
	var held []eventDoc
	if err := cur.All(ctx, &held); err != nil {
		return err
	}
	again, err := s.head(ctx, liveFilter(id, s.now()))
	if err != nil {
		return err
	}
	if again.Incarnation != h.Incarnation {
		return cairn.ErrNotFound
	}
	if !slices.EqualFunc(held, docs, func(h, d eventDoc) bool { return h.Seq == d.Seq && bytes.Equal(h.Event, d.Event) }) {
		return cairn.ErrConflict
	}
	return errRetried
}

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// commitFields returns the $set and the other update operators with which
// a commit moves the session document to last, and the events' info delta.
func (s *Store) commitFields(events []cairn.Event, last int64, now time.Time) (set, update bson.D, delta driver.InfoDelta) {
	delta = driver.Summarize(events)
	expNs, expAt := s.expiry(now)
	set = bson.D{
		{Key: "last_seq", Value: last},
		{Key: "updated_ns", Value: now.UnixNano()},
		{Key: "updated_at", Value: bson.NewDateTimeFromTime(now)},
		{Key: "expires_ns", Value: expNs},
	}
	update = bson.D{{Key: "$inc", Value: bson.D{{Key: "steps", Value: delta.Steps}}}}
	if expAt != nil {
		set = append(set, bson.E{Key: "expires_at", Value: *expAt})
	} else {
		update = append(update, bson.E{Key: "$unset", Value: bson.D{{Key: "expires_at", Value: ""}}})
	}
	if delta.Status != "" {
		set = append(set, bson.E{Key: "status", Value: string(delta.Status)})
	}
	return set, update, delta
}

// eventDocs returns the documents of session id's events, each holding its
// envelope as driver.AppendEnvelope writes it, all cut from one buffer,
// and its entry in the text index (postings).
func eventDocs(id string, events []cairn.Event) ([]eventDoc, error) {
	n := 0
	for _, e := range events {
		n += len(e.Data) + len(e.Kind) + len(e.Run) + 112
	}
	buf := make([]byte, 0, n)
	docs := make([]eventDoc, len(events))
	for i, e := range events {
		start := len(buf)
		var err error
		if buf, err = driver.AppendEnvelope(buf, e); err != nil {
			return nil, err
		}
		docs[i] = eventDoc{Session: id, Seq: e.Seq, Event: buf[start:len(buf):len(buf)]}
		docs[i].Toks, docs[i].TF, docs[i].TLen = postings(e, len(buf)-start)
	}
	return docs, nil
}
