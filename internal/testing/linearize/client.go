package linearize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
)

// Client is one caller of a store: it runs random operations on a few
// sessions, the way agents and workers use a store (append at the seq it
// last saw, load again after a conflict, retry an append whose reply was
// lost, hold a lease and write fenced with it, renew and release it, take
// a session over, delete it and create it again), and records each call
// and return.
type Client struct {
	ID       int           // unique among the clients of a history
	Store    cairn.Store   // the store, through whatever faults the test injects
	Sessions []string      // the sessions it works on, created beforehand
	Rec      Recorder      // where its operations go
	Rand     *rand.Rand    // its choices
	TTL      time.Duration // the leases it takes
	Timeout  time.Duration // each call's deadline; past it the outcome is unknown

	views map[string]*view
	n     int // events made, for their IDs
	last  *pending
}

// view is what a client believes of a session.
type view struct {
	seq     int64        // last seq it saw
	missing bool         // its last call found the session gone
	lease   *cairn.Lease // the lease it holds, if it thinks it holds one
}

// pending is an append to send again: one whose outcome is unknown, or one
// that succeeded and is sent again as a retry after a lost reply would be.
type pending struct {
	session   string
	expectSeq int64
	events    []cairn.Event
	lease     *cairn.Lease
	tries     int
}

// EventID is the identity of an event in a history: the ID its data
// carries and a CRC-32 of its whole envelope, so that a Load returning an
// event changed in any byte does not match.
func EventID(e cairn.Event) string {
	b, _ := json.Marshal(e)
	var c cairn.Custom
	_ = json.Unmarshal(e.Data, &c)
	var id string
	_ = json.Unmarshal(c.Payload, &id)
	return fmt.Sprintf("%s:%08x", id, crc32.ChecksumIEEE(b))
}

// Run makes n operations, or fewer if ctx ends first.
func (c *Client) Run(ctx context.Context, n int) {
	for i := 0; i < n && ctx.Err() == nil; i++ {
		c.Step(ctx)
	}
}

// view returns what the client believes of session id.
func (c *Client) view(id string) *view {
	if c.views == nil {
		c.views = map[string]*view{}
	}
	v := c.views[id]
	if v == nil {
		v = &view{}
		c.views[id] = v
	}
	return v
}

// forget resets what the client believes of session id; missing: it found
// the session gone.
func (c *Client) forget(id string, missing bool) {
	c.view(id)
	c.views[id] = &view{missing: missing}
}

// Step makes one operation.
func (c *Client) Step(ctx context.Context) {
	if p := c.last; p != nil {
		c.last = nil
		c.appendEvents(ctx, p)
		return
	}
	id := c.Sessions[c.Rand.IntN(len(c.Sessions))]
	v := c.view(id)
	leaser, hasLeases := c.Store.(cairn.Leaser)
	r := c.Rand.IntN(100)
	switch {
	case v.missing && r < 60:
		c.create(ctx, id)
	case r < 25:
		c.load(ctx, id)
	case r < 60:
		k := 1 + c.Rand.IntN(3)
		p := &pending{session: id, expectSeq: v.seq, lease: v.lease}
		if p.lease != nil && c.Rand.IntN(10) == 0 {
			p.lease = nil // a holder that writes without its lease
		}
		for range k {
			c.n++
			p.events = append(p.events, c.event(p.expectSeq+int64(len(p.events))+1))
		}
		c.appendEvents(ctx, p)
	case !hasLeases:
		c.load(ctx, id)
	case v.lease == nil && r < 75:
		c.acquire(ctx, leaser, id, false)
	case v.lease != nil && r < 75:
		c.renew(ctx, leaser, id)
	case v.lease != nil && r < 82:
		c.release(ctx, leaser, id)
	case r < 85:
		c.acquire(ctx, leaser, id, true)
	case r < 88:
		c.delete(ctx, id)
	default:
		c.load(ctx, id)
	}
}

func (c *Client) event(seq int64) cairn.Event {
	id := fmt.Sprintf("c%d.%d", c.ID, c.n)
	payload, _ := json.Marshal(id)
	e := cairn.MustEvent(cairn.KindCustom, "linearize", cairn.Custom{Type: "linearize.op", Payload: payload})
	e.Seq = seq
	return e
}

// call runs f with the call's deadline and records it.
func (c *Client) call(ctx context.Context, in Input, f func(context.Context) Output) Output {
	in.Client = c.ID
	in.Start = time.Now().UnixNano()
	n := c.Rec.Call(in)
	cctx, cancel := context.WithTimeout(ctx, c.Timeout)
	out := f(cctx)
	cancel()
	c.Rec.Return(n, out, time.Now().UnixNano())
	if out.Result == Unknown {
		// The store did not answer: wait a little, as a caller that
		// backs off does, rather than pile up calls of unknown outcome.
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(20+c.Rand.IntN(80)) * time.Millisecond):
		}
	}
	return out
}

// classify turns a store's error into a Result.
func classify(err error) Output {
	switch {
	case err == nil:
		return Output{Result: OK}
	case errors.Is(err, cairn.ErrConflict):
		return Output{Result: Conflict}
	case errors.Is(err, cairn.ErrLeaseLost):
		return Output{Result: LeaseLost}
	case errors.Is(err, cairn.ErrNotFound):
		return Output{Result: NotFound}
	case errors.Is(err, cairn.ErrExists):
		return Output{Result: Exists}
	case errors.Is(err, cairn.ErrLeaseHeld):
		return Output{Result: Held}
	}
	return Output{Result: Unknown, Err: errText(err)}
}

// notOutage begins the text of an unknown outcome's error that
// cairn.IsUnavailable does not call an outage.
const notOutage = "not an outage: "

// errText is an error's text, marked when it is not an outage.
func errText(err error) string {
	if !cairn.IsUnavailable(err) {
		return notOutage + err.Error()
	}
	return err.Error()
}

func (c *Client) create(ctx context.Context, id string) {
	out := c.call(ctx, Input{Session: id, Kind: Create}, func(ctx context.Context) Output {
		return classify(c.Store.Create(ctx, cairn.SessionMeta{ID: id}))
	})
	if out.Result == OK || out.Result == Exists {
		c.forget(id, false)
	}
}

func (c *Client) delete(ctx context.Context, id string) {
	out := c.call(ctx, Input{Session: id, Kind: Delete}, func(ctx context.Context) Output {
		return classify(c.Store.Delete(ctx, id))
	})
	if out.Result == OK || out.Result == NotFound {
		c.forget(id, true)
	}
}

func (c *Client) load(ctx context.Context, id string) {
	out := c.call(ctx, Input{Session: id, Kind: Load}, func(ctx context.Context) Output {
		rec, err := c.Store.Load(ctx, id, 0)
		if err != nil {
			return classify(err)
		}
		return loaded(rec)
	})
	v := c.view(id)
	switch out.Result {
	case OK:
		v.seq, v.missing = out.LastSeq, false
	case NotFound:
		c.forget(id, true)
	}
}

// loaded checks a loaded record on its own (dense seqs from 1, the info's
// last seq) and returns its seq and digest.
func loaded(rec *cairn.Record) Output {
	out := Output{Result: OK}
	var tail []string
	for i, e := range rec.Events {
		if e.Seq != int64(i+1) {
			return Output{Result: Malformed, Err: fmt.Sprintf("event %d of the load has seq %d", i, e.Seq)}
		}
		id := EventID(e)
		out.Digest = Digest(out.Digest, id)
		tail = append(tail, id)
	}
	out.LastSeq = int64(len(rec.Events))
	if rec.Info.LastSeq != out.LastSeq {
		return Output{Result: Malformed, Err: fmt.Sprintf("the info's last seq is %d, the load holds %d events", rec.Info.LastSeq, out.LastSeq)}
	}
	out.Tail = strings.Join(tail[max(0, len(tail)-maxTail):], ",")
	out.IDs = tail
	return out
}

// appendEvents sends p and decides what comes next: an unknown outcome is
// sent again (up to twice); a success is now and then sent again, as a
// retry after a lost reply would be.
func (c *Client) appendEvents(ctx context.Context, p *pending) {
	ids := make([]string, len(p.events))
	for i, e := range p.events {
		ids[i] = EventID(e)
	}
	in := Input{Session: p.session, Kind: Append, ExpectSeq: p.expectSeq, Events: ids}
	if p.lease != nil {
		in.Fenced, in.Token = true, p.lease.Token
	}
	out := c.call(ctx, in, func(ctx context.Context) Output {
		if p.lease != nil {
			return classify(c.Store.(cairn.Leaser).AppendFenced(ctx, p.session, *p.lease, p.expectSeq, p.events...))
		}
		return classify(c.Store.Append(ctx, p.session, p.expectSeq, p.events...))
	})
	p.tries++
	v := c.view(p.session)
	switch out.Result {
	case OK:
		v.seq = max(v.seq, p.expectSeq+int64(len(p.events)))
		if p.tries == 1 && c.Rand.IntN(8) == 0 {
			c.last = p
		}
	case Unknown:
		if p.tries < 3 {
			c.last = p
		}
	case LeaseLost:
		if v.lease != nil && p.lease != nil && v.lease.Token == p.lease.Token {
			v.lease = nil
		}
	case NotFound:
		c.forget(p.session, true)
	}
}

func (c *Client) holder() string { return fmt.Sprintf("client-%d", c.ID) }

func (c *Client) acquire(ctx context.Context, l cairn.Leaser, id string, force bool) {
	kind := Acquire
	if force {
		kind = Takeover
	}
	var lease cairn.Lease
	out := c.call(ctx, Input{Session: id, Kind: kind, Holder: c.holder(), TTL: c.TTL}, func(ctx context.Context) Output {
		var err error
		if force {
			lease, err = l.Takeover(ctx, id, c.holder(), c.TTL)
		} else {
			lease, err = l.Acquire(ctx, id, c.holder(), c.TTL)
		}
		out := classify(err)
		out.Token = lease.Token
		return out
	})
	switch out.Result {
	case OK:
		c.view(id).lease = &lease
	case NotFound:
		c.forget(id, true)
	}
}

func (c *Client) renew(ctx context.Context, l cairn.Leaser, id string) {
	v := c.view(id)
	old := *v.lease
	var next cairn.Lease
	out := c.call(ctx, Input{Session: id, Kind: Renew, Token: old.Token, TTL: c.TTL}, func(ctx context.Context) Output {
		var err error
		next, err = l.Renew(ctx, old, c.TTL)
		out := classify(err)
		out.Token = next.Token
		return out
	})
	switch out.Result {
	case OK:
		v.lease = &next
	case LeaseLost:
		v.lease = nil
	case NotFound:
		c.forget(id, true)
	}
}

func (c *Client) release(ctx context.Context, l cairn.Leaser, id string) {
	v := c.view(id)
	old := *v.lease
	out := c.call(ctx, Input{Session: id, Kind: Release, Token: old.Token}, func(ctx context.Context) Output {
		return classify(l.Release(ctx, old))
	})
	switch out.Result {
	case OK, LeaseLost:
		v.lease = nil
	case NotFound:
		c.forget(id, true)
	}
}
