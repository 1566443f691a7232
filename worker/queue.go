package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/cairnhq/cairn"
)

// The queue protocol. A queued run is a new session that carries the label
// QueueLabel (its value is the queue's name) and holds one event: a custom
// event of type QueuedType whose payload is {"input": "<prompt>"}. Its
// status is "new" until a worker starts the run. No event kind is added
// for it, so the format version stays 1 and any cairn reads such a
// session.
const (
	// QueueLabel is the label that puts a session in a queue; its value
	// is the queue's name.
	QueueLabel = "cairn.queue"
	// DefaultQueue is the queue of Enqueue and Run when none is named.
	DefaultQueue = "default"
	// QueuedType is the type of the custom event that holds a queued
	// run's input.
	QueuedType = "cairn.queued"
)

// queuedRun is the payload of a QueuedType event.
type queuedRun struct {
	Input string `json:"input"`
}

// Filter returns what a worker of queue claims: the sessions labelled with
// it whose status is new (a queued run), running (its worker died or
// stalled past its lease) or interrupted. An empty queue is DefaultQueue.
// Stores implementing driver.Claimer are tested with it.
func Filter(queue string) cairn.ListOptions {
	if queue == "" {
		queue = DefaultQueue
	}
	return cairn.ListOptions{
		Status: []cairn.Status{cairn.StatusNew, cairn.StatusRunning, cairn.StatusInterrupted},
		Labels: map[string]string{QueueLabel: queue},
	}
}

// EnqueueOptions configure Enqueue.
type EnqueueOptions struct {
	// ID is the new session's ID. Empty: a new random one (cairn.NewID).
	ID string
	// Queue is the queue to put the run in. Empty: DefaultQueue.
	Queue string
	// Labels are more labels for the session; QueueLabel is Enqueue's.
	Labels map[string]string
}

// Enqueue records a run of input in a new session for a worker to start,
// and returns the session's ID. No model is called. It returns an error
// wrapping cairn.ErrInvalidID for an ID that breaks the rules, and
// cairn.ErrExists when the store holds a session with that ID already (a
// queued run starts a new session).
func Enqueue(ctx context.Context, store cairn.Store, input string, opts EnqueueOptions) (string, error) {
	id := opts.ID
	if id == "" {
		id = cairn.NewID()
	} else if err := cairn.ValidateID(id); err != nil {
		return "", err
	}
	queue := opts.Queue
	if queue == "" {
		queue = DefaultQueue
	}
	payload, err := json.Marshal(queuedRun{Input: input})
	if err != nil {
		return "", err
	}
	e, err := cairn.NewEvent(cairn.KindCustom, "", cairn.Custom{Type: QueuedType, Payload: payload})
	if err != nil {
		return "", err
	}
	e.Seq = 1
	labels := maps.Clone(opts.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[QueueLabel] = queue
	if err := store.Create(ctx, cairn.SessionMeta{ID: id, Labels: labels}); err != nil {
		return "", err
	}
	if err := store.Append(ctx, id, 0, e); err != nil {
		// Leave no empty queued session for workers to claim and skip
		// on every poll: remove it when the store shows the run was not
		// recorded (after an outage it may have been: then it stays).
		cctx := context.WithoutCancel(ctx)
		if rec, lerr := store.Load(cctx, id, 0); lerr == nil && len(rec.Events) == 0 {
			store.Delete(cctx, id)
		}
		return "", fmt.Errorf("queue a run in session %s: %w", id, err)
	}
	return id, nil
}

// QueuedInput returns the input of the last queued run recorded in events
// (the payload of the last QueuedType event); false when there is none.
func QueuedInput(events []cairn.Event) (string, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Kind != cairn.KindCustom {
			continue
		}
		var c cairn.Custom
		if json.Unmarshal(e.Data, &c) != nil || c.Type != QueuedType {
			continue
		}
		var q queuedRun
		if json.Unmarshal(c.Payload, &q) != nil {
			continue
		}
		return q.Input, true
	}
	return "", false
}
