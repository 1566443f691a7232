package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/words"
)

// The shape of a scale fill. A fill is reused only when its marker records
// the same version, so a change to what a fill holds must bump fillVersion.
const (
	fillVersion = 2
	fillSpan    = 30 * 24 * time.Hour // the history the sessions' times spread over
	// scaleTTL expires the sessions last updated in the first tenth of
	// the span: those are what gc removes.
	scaleTTL    = fillSpan - fillSpan/10
	fillWorkers = 8
	// teamLabel is the label a tenth of the sessions carry, with one of
	// teams as its value.
	teamLabel = "team"
)

var teams = []string{"payments", "search", "growth", "infra", "support"}

// mix is SplitMix64: the deterministic randomness of a fill, so that
// session i of a fill of n is the same in every run.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// plan is a fill of n sessions: where each one sits in time and what it
// holds. Sessions are written in batches of batch; every session of a
// batch is updated at the batch's time (and a microsecond per store clock
// reading after it), so that which sessions expire does not depend on the
// order in which the writers finish.
type plan struct {
	n     int
	t0    time.Time // the end of the span: the measurement clock starts here
	batch int
}

func newPlan(n int, t0 time.Time) plan {
	return plan{n: n, t0: t0.UTC().Truncate(time.Second), batch: min(512, max(8, n/200))}
}

func (p plan) batches() int { return (p.n + p.batch - 1) / p.batch }

// batchTime is the store clock of batch b: the batches spread evenly over
// the span, the last one at t0.
func (p plan) batchTime(b int) time.Time {
	return p.t0.Add(-fillSpan + time.Duration(int64(fillSpan)/int64(p.batches())*int64(b+1)))
}

// measureStart is where the measurement clock starts: a second after
// t0. The fill's clock gives each reading in a batch a microsecond more
// than the last (a few readings a session, so up to a few milliseconds
// for a batch of 512), and a session expires when its last reading's
// time plus the TTL has passed: started at t0 itself, the measurement
// found the last sessions of the last expired batch still live when gc
// ran a second or two later (371 of 10,000 at 100,000 sessions). A
// second is past all of them, and far from the next batch, a batch
// interval (minutes at least) later.
func (p plan) measureStart() time.Time { return p.t0.Add(time.Second) }

// expired is how many sessions have expired when the measurement starts
// (and for long after: the next batch expires a whole batch interval
// later): those whose batch time is at most measureStart - scaleTTL.
func (p plan) expired() int {
	n := 0
	for b := range p.batches() {
		if p.batchTime(b).Add(scaleTTL).After(p.measureStart()) {
			break
		}
		n += min(p.batch, p.n-b*p.batch)
	}
	return n
}

// session is what session i of the fill holds.
type session struct {
	meta   cairn.SessionMeta
	status cairn.Status
	events []cairn.Event
}

// sessionAt returns session i of the fill.
func (p plan) sessionAt(i int) session {
	h := mix(uint64(i)<<20 ^ uint64(p.n))
	created := p.t0.Add(-fillSpan + time.Duration(int64(fillSpan)/int64(p.n)*int64(i)))
	s := session{meta: cairn.SessionMeta{ID: scaleID(created, h), CreatedAt: created}}
	if mix(h)%10 == 0 {
		s.meta.Labels = map[string]string{teamLabel: teams[mix(h+1)%uint64(len(teams))]}
	}
	s.status = statusOf(h % 1000)
	s.events = turn(s.status, created, i)
	return s
}

// statusOf spreads the statuses of a fill as a busy store has them: most
// runs completed, a few failed, interrupted, waiting for a person or not
// started, and one in a thousand stopped at its step limit.
func statusOf(r uint64) cairn.Status {
	switch {
	case r == 0:
		return cairn.StatusMaxSteps
	case r <= 20:
		return cairn.StatusNew
	case r <= 40:
		return cairn.StatusAwaiting
	case r <= 70:
		return cairn.StatusInterrupted
	case r <= 120:
		return cairn.StatusFailed
	}
	return cairn.StatusCompleted
}

// scaleID is a session ID in the form cairn.NewID makes (a UUIDv7: its
// first characters are the creation time), from the creation time and h.
func scaleID(created time.Time, h uint64) string {
	ms := uint64(created.UnixMilli())
	r := mix(h ^ 0x5ca1e)
	return fmt.Sprintf("%08x-%04x-7%03x-%04x-%012x", ms>>16, ms&0xffff, h&0xfff, 0x8000|(r>>48)&0x3fff, r&0xffffffffffff)
}

var (
	question = strings.Repeat("Summarise the failed payments of last week by country and say which ones need a refund. ", 4)
	answer   = strings.Repeat("Three countries account for most failed payments; the refunds are listed below. ", 4)
)

// vocabulary gives the words of the sessions' questions.
var vocabulary = sync.OnceValue(func() *words.Words { return words.New(1) })

// orderWord is a word that session i of a fill holds and no other: the
// order number its question names.
func orderWord(i int) string { return fmt.Sprintf("ord%07d", i) }

// asked is what session i's question says beyond the common part: 12
// words drawn by frequency, the same for the same i, and its order.
func asked(i int) string {
	var b strings.Builder
	h := mix(uint64(i) ^ 0xa5ced)
	for j := range 12 {
		r := mix(h + uint64(j))
		rank := r % 20000 * ((r >> 32) % 20000) / 20000 // the frequent words more often
		b.WriteString(vocabulary().At(int(rank)) + " ")
	}
	return b.String() + "Order " + orderWord(i) + "."
}

// turn is a session's history: one user turn of 4 events (~1 KB), ended
// as its status says; none for a new session.
func turn(st cairn.Status, at time.Time, i int) []cairn.Event {
	if st == cairn.StatusNew {
		return nil
	}
	run := fmt.Sprintf("run-%d", i)
	end := cairn.MustEvent(cairn.KindRunFinished, run, cairn.RunFinished{Status: cairn.Status(st), Output: answer[:80]})
	switch st {
	case cairn.StatusFailed:
		end = cairn.MustEvent(cairn.KindRunFinished, run, cairn.RunFinished{Status: cairn.StatusFailed,
			Error: &cairn.ErrorInfo{Code: "provider_error", Message: "the model provider answered 503 three times"}})
	case cairn.StatusInterrupted:
		end = cairn.MustEvent(cairn.KindRunInterrupted, run, cairn.RunInterrupted{Reason: cairn.InterruptCancelled})
	case cairn.StatusAwaiting:
		end = cairn.MustEvent(cairn.KindRunInterrupted, run, cairn.RunInterrupted{Reason: cairn.InterruptApproval,
			Pending: []cairn.ToolCall{{ID: "call_1", Name: "refund", Args: json.RawMessage(`{"payment":"p_123"}`)}}})
	}
	evs := []cairn.Event{
		cairn.MustEvent(cairn.KindRunStarted, run, cairn.RunStarted{RunID: run, Agent: "support", Model: "gpt-4.1"}),
		cairn.MustEvent(cairn.KindMessageUser, run, cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: question + asked(i)}}}),
		cairn.MustEvent(cairn.KindModelResponse, run, cairn.ModelResponse{Text: answer, Model: "gpt-4.1",
			Usage: cairn.Usage{InputTokens: 420, OutputTokens: 96}, FinishReason: "stop", LatencyMS: 900}),
		end,
	}
	for j := range evs {
		evs[j].Seq, evs[j].At = int64(j+1), at.Add(time.Duration(j)*time.Second)
	}
	return evs
}

// fillClock is the store clock of a fill: the time of the batch being
// written, a microsecond later at each reading, so that times stay
// distinct and ordered.
type fillClock struct {
	base atomic.Int64 // Unix nanoseconds
	tick atomic.Int64
}

func (c *fillClock) set(t time.Time) { c.base.Store(t.UnixNano()); c.tick.Store(0) }

func (c *fillClock) now() time.Time {
	return time.Unix(0, c.base.Load()+c.tick.Add(1)*int64(time.Microsecond)).UTC()
}

// fill writes sessions from..to-1 of p through s, whose clock is clock, 8
// at a time. A session that is already there is left as it is, or given
// its events if it has none (a top-up after gc writes only what gc
// removed; a fill that was stopped goes on where it was). report is told how many are
// done, about once a second.
func fill(ctx context.Context, s cairn.Store, clock *fillClock, p plan, from, to int, report func(done int)) (err error) {
	var done atomic.Int64
	stop, stopped := make(chan struct{}), make(chan struct{})
	defer func() {
		// The ticker's report must end before the last one: report is
		// not safe for concurrent use.
		close(stop)
		<-stopped
		if err == nil {
			report(int(done.Load()))
		}
	}()
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				report(int(done.Load()))
			}
		}
	}()
	for b := from / p.batch; b*p.batch < to; b++ {
		lo, hi := max(from, b*p.batch), min(to, (b+1)*p.batch)
		clock.set(p.batchTime(b))
		var (
			next atomic.Int64
			wg   sync.WaitGroup
			errs = make([]error, fillWorkers)
		)
		next.Store(int64(lo))
		for w := range fillWorkers {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < hi; i = int(next.Add(1) - 1) {
					if errs[w] = writeSession(ctx, s, p.sessionAt(i)); errs[w] != nil {
						return
					}
					done.Add(1)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

func writeSession(ctx context.Context, s cairn.Store, ses session) error {
	err := s.Create(ctx, ses.meta)
	if errors.Is(err, cairn.ErrExists) && len(ses.events) > 0 {
		// Written by an earlier fill, which may have stopped before the
		// session's Append.
		rec, err := s.Stat(ctx, ses.meta.ID)
		if err != nil || rec.LastSeq > 0 {
			return err
		}
	} else if errors.Is(err, cairn.ErrExists) {
		return nil
	} else if err != nil {
		return fmt.Errorf("create %s: %w", ses.meta.ID, err)
	}
	if len(ses.events) > 0 {
		if err := s.Append(ctx, ses.meta.ID, 0, ses.events...); err != nil {
			return fmt.Errorf("append to %s: %w", ses.meta.ID, err)
		}
	}
	return nil
}

// marker is what a filled store records about its fill, in a namespace of
// its own beside the fill's: a session whose events are custom events
// carrying markerState, the last one current.
type marker struct {
	Version  int       `json:"version"`
	Sessions int       `json:"sessions"`
	T0       time.Time `json:"t0"`
	Batch    int       `json:"batch"`
	State    string    `json:"state"` // stateFilling, stateComplete or stateSwept
}

// The states of a fill.
const (
	stateFilling  = "filling"  // being written: to be finished before it is used
	stateComplete = "complete" // every session there
	stateSwept    = "swept"    // a gc removed the expired sessions: they are to be written again
)

const markerID = "fill"

func markerNamespace(ns string) string { return ns + "_marker" }

// readMarker returns the store's marker, or nil when it has none.
func readMarker(ctx context.Context, s cairn.Store) (*marker, int64, error) {
	rec, err := s.Load(ctx, markerID, 0)
	if errors.Is(err, cairn.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read the fill's marker: %w", err)
	}
	if len(rec.Events) == 0 {
		return nil, 0, nil
	}
	var c cairn.Custom
	if err := json.Unmarshal(rec.Events[len(rec.Events)-1].Data, &c); err != nil {
		return nil, 0, fmt.Errorf("read the fill's marker: %w", err)
	}
	var m marker
	if err := json.Unmarshal(c.Payload, &m); err != nil {
		return nil, 0, fmt.Errorf("read the fill's marker: %w", err)
	}
	return &m, rec.Info.LastSeq, nil
}

// writeMarker records m after the marker's event last (0: a new marker).
func writeMarker(ctx context.Context, s cairn.Store, m marker, last int64) error {
	if last == 0 {
		if err := s.Create(ctx, cairn.SessionMeta{ID: markerID, Labels: map[string]string{"sessions": strconv.Itoa(m.Sessions)}}); err != nil &&
			!errors.Is(err, cairn.ErrExists) {
			return fmt.Errorf("write the fill's marker: %w", err)
		}
	}
	payload, _ := json.Marshal(m)
	e := cairn.MustEvent(cairn.KindCustom, "fill", cairn.Custom{Type: "bench.scale_fill", Payload: payload})
	e.Seq, e.At = last+1, time.Now().UTC()
	if err := s.Append(ctx, markerID, last, e); err != nil {
		return fmt.Errorf("write the fill's marker: %w", err)
	}
	return nil
}
