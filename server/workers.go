package server

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/worker"
)

// The workers view: the sessions that are queued, running or waiting to be
// finished, with the lease each is held under, by queue and by holder
// (GET /workers and GET /api/workers). Queues are worker.QueueLabel's
// values; a holder is the worker (or process) whose lease a session is
// held under.

// Where a session stands for the workers.
const (
	workWaiting  = "waiting"           // new: no worker has started it
	workRunning  = "running"           // held under a live lease
	workStalled  = "stalled"           // running, but its lease expired: a worker will take it over
	workResume   = "interrupted"       // interrupted: a worker will finish it
	workApproval = "awaiting_approval" // waits for a person's decision, not for a worker
)

var workStates = []string{workWaiting, workRunning, workStalled, workResume, workApproval}

// workersReport is the workers view.
type workersReport struct {
	Leases   bool            `json:"leases"` // the store has leases; without them no worker can run on it
	Read     int             `json:"sessions_read"`
	Capped   bool            `json:"capped"` // more sessions than a view reads are queued or under way
	Queues   []workerQueue   `json:"queues"`
	Holders  []workerHolder  `json:"holders"`
	Sessions []workerSession `json:"sessions"`
}

// workerQueue counts a queue's sessions by state; Queue "" is the
// sessions under a lease that are in no queue (a cairn run, a chat).
type workerQueue struct {
	Queue         string         `json:"queue"`
	States        map[string]int `json:"states"`
	OldestWaiting *time.Time     `json:"oldest_waiting,omitempty"` // when the longest-waiting new session was created
	Takeovers     int64          `json:"takeovers"`                // the takeovers of its sessions in the view, all told
}

// workerHolder is one lease holder: the sessions it runs now.
type workerHolder struct {
	Holder     string    `json:"holder"`
	Sessions   int       `json:"sessions"`
	NextExpiry time.Time `json:"next_expiry"` // the soonest of its leases' expiries: it renews them before
}

// workerSession is a session the view shows.
type workerSession struct {
	ID        string       `json:"id"`
	Queue     string       `json:"queue"`
	Status    cairn.Status `json:"status"`
	State     string       `json:"state"`
	Holder    string       `json:"holder,omitempty"`
	Expires   *time.Time   `json:"lease_expires,omitempty"`
	Token     int64        `json:"lease_token,omitempty"` // the lease's fencing token: a later lease of the session has a higher one
	Takeovers int64        `json:"takeovers"`             // leases granted while an earlier holder had not released it (cairn.Lease.Takeovers)
	CreatedAt time.Time    `json:"created_at"`
	UpdatedAt time.Time    `json:"updated_at"`
	Input     string       `json:"input"` // the first user message, or a queued run's input
}

// workers reads the workers view.
func (s *Server) workers(ctx context.Context) (*workersReport, error) {
	rep := &workersReport{}
	leaser, ok := s.store.(cairn.Leaser)
	rep.Leases = ok
	queues := map[string]*workerQueue{}
	inputs, leaseReads := 0, 0 // queued inputs and leases read one by one
	holders := map[string]*workerHolder{}
	opts := cairn.ListOptions{Status: []cairn.Status{cairn.StatusNew, cairn.StatusRunning, cairn.StatusInterrupted, cairn.StatusAwaiting},
		Limit: min(MaxListLimit, maxFleetSessions)}
	for {
		page, err := s.store.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		infos := page.Sessions
		if room := maxFleetSessions - rep.Read; len(infos) > room {
			infos, rep.Capped = infos[:room], true
		}
		rep.Read += len(infos)
		leases := map[string]cairn.Lease{}
		if leaser != nil && len(infos) > 0 {
			ids := make([]string, len(infos))
			for i, info := range infos {
				ids[i] = info.ID
			}
			if leases, err = leaser.CurrentLeases(ctx, ids); err != nil {
				return nil, fmt.Errorf("read the leases: %w", err)
			}
		}
		for _, info := range infos {
			queue, queued := info.Labels[worker.QueueLabel]
			lease, held := leases[info.ID]
			if !queued && !held {
				continue // neither queued nor under way in a holder's hands
			}
			ws := workerSession{ID: info.ID, Queue: queue, Status: info.Status, CreatedAt: info.CreatedAt, UpdatedAt: info.UpdatedAt, Input: info.FirstMessage}
			if ws.Input == "" && queued && inputs < maxQueuedInputs {
				inputs++
				ws.Input = s.queuedInput(ctx, info.ID)
			}
			switch {
			case held:
				ws.State, ws.Holder, ws.Token, ws.Takeovers = workRunning, lease.Holder, lease.Token, lease.Takeovers
				exp := lease.Expires
				ws.Expires = &exp
			case info.Status == cairn.StatusNew:
				ws.State = workWaiting
			case info.Status == cairn.StatusRunning:
				ws.State = workStalled
			case info.Status == cairn.StatusAwaiting:
				ws.State = workApproval
			default:
				ws.State = workResume
			}
			if (ws.State == workStalled || ws.State == workResume) && leaser != nil && leaseReads < maxQueuedInputs {
				// Run before and left: its takeovers outlive its lease.
				leaseReads++
				if l, err := leaser.CurrentLease(ctx, info.ID); err == nil {
					ws.Takeovers = l.Takeovers
				}
			}
			q := queues[queue]
			if q == nil {
				q = &workerQueue{Queue: queue, States: map[string]int{}}
				queues[queue] = q
			}
			q.States[ws.State]++
			q.Takeovers += ws.Takeovers
			if ws.State == workWaiting && (q.OldestWaiting == nil || info.CreatedAt.Before(*q.OldestWaiting)) {
				c := info.CreatedAt
				q.OldestWaiting = &c
			}
			if held {
				h := holders[lease.Holder]
				if h == nil {
					h = &workerHolder{Holder: lease.Holder, NextExpiry: lease.Expires}
					holders[lease.Holder] = h
				}
				h.Sessions++
				if lease.Expires.Before(h.NextExpiry) {
					h.NextExpiry = lease.Expires
				}
			}
			rep.Sessions = append(rep.Sessions, ws)
		}
		if page.Next == "" || rep.Capped {
			break
		}
		if rep.Read == maxFleetSessions {
			rep.Capped = true
			break
		}
		opts.Cursor = page.Next
	}
	for _, k := range slices.Sorted(maps.Keys(queues)) {
		rep.Queues = append(rep.Queues, *queues[k])
	}
	for _, k := range slices.Sorted(maps.Keys(holders)) {
		rep.Holders = append(rep.Holders, *holders[k])
	}
	// Running first (soonest expiry first), then what waits for a worker,
	// longest waiting first, then what waits for a person.
	rank := func(w workerSession) int {
		return slices.Index([]string{workRunning, workStalled, workResume, workWaiting, workApproval}, w.State)
	}
	slices.SortStableFunc(rep.Sessions, func(a, b workerSession) int {
		if c := cmp.Compare(rank(a), rank(b)); c != 0 {
			return c
		}
		if a.Expires != nil && b.Expires != nil {
			return a.Expires.Compare(*b.Expires)
		}
		return a.CreatedAt.Compare(b.CreatedAt)
	})
	return rep, nil
}

// maxQueuedInputs bounds the queued sessions whose input one view reads
// (a load each: a queued session holds one event), and the sessions left
// by their holder whose lease it reads.
const maxQueuedInputs = 200

// queuedInput returns the input of queued session id, cut for a listing,
// or "" when it has none or cannot be read now.
func (s *Server) queuedInput(ctx context.Context, id string) string {
	rec, err := s.store.Load(ctx, id, 1)
	if err != nil {
		return ""
	}
	in, _ := worker.QueuedInput(rec.Events)
	return text.Truncate(in, 200)
}

func (s *Server) apiWorkers(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.workers(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

type workersData struct {
	base
	workersReport
	States []string
	Now    time.Time
}

func (s *Server) uiWorkers(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.workers(r.Context())
	if err != nil {
		return err
	}
	return s.render(w, http.StatusOK, "workers.html", workersData{base: s.base(r, "Workers", "workers"), workersReport: *rep,
		States: workStates, Now: time.Now()})
}
