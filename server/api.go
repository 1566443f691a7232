package server

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

//go:embed openapi.json
var openAPIDoc []byte

func (s *Server) apiOpenAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, err := w.Write(openAPIDoc)
	return err
}

// sessionJSON is a session's info as the API shows it: the store's info
// (an incomplete import's status is "incomplete") and the holder of its
// lease, if any.
type sessionJSON struct {
	cairn.SessionInfo
	Holder       string     `json:"holder,omitempty"`
	LeaseExpires *time.Time `json:"lease_expires,omitempty"`
}

func (s *Server) apiList(w http.ResponseWriter, r *http.Request) error {
	lq, err := parseListQuery(r.URL.Query())
	if err != nil {
		return err
	}
	items, next, err := s.list(r.Context(), lq)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": items, "next": next})
	return nil
}

func (s *Server) apiCreate(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		ID     string            `json:"id"`
		Labels map[string]string `json:"labels"`
	}
	if err := decodeBody(r, &req, true); err != nil {
		return err
	}
	if req.ID == "" {
		req.ID = cairn.NewID()
	}
	if err := validID("id", req.ID); err != nil {
		return err
	}
	if err := s.store.Create(r.Context(), cairn.SessionMeta{ID: req.ID, Labels: req.Labels}); err != nil {
		return fmt.Errorf("create %s: %w", req.ID, err)
	}
	rec, err := s.store.Stat(r.Context(), req.ID)
	if err != nil {
		return fmt.Errorf("load %s: %w", req.ID, err)
	}
	w.Header().Set("Location", "/api/sessions/"+req.ID)
	writeJSON(w, http.StatusCreated, map[string]any{"session": s.sessionJSON(r.Context(), *rec)})
	return nil
}

func (s *Server) apiGet(w http.ResponseWriter, r *http.Request) error {
	id, rec, err := s.loadPath(r)
	if err != nil {
		return err
	}
	st, err := rec.stateAt(int64(len(rec.Events)))
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": s.sessionJSON(r.Context(), rec.Info), "state": st})
	return nil
}

func (s *Server) apiDelete(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if err := s.deleteSession(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) apiState(w http.ResponseWriter, r *http.Request) error {
	id, rec, err := s.loadPath(r)
	if err != nil {
		return err
	}
	last := int64(len(rec.Events))
	at, err := parseSeqAt(r.URL.Query(), "at", last)
	if err != nil {
		return err
	}
	st, err := rec.stateAt(at)
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"at": at, "last_seq": last, "state": st})
	return nil
}

// Paging of the events API.
const (
	DefaultEventsLimit = 500
	MaxEventsLimit     = 5000
)

func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	after, err := queryInt(q, "after", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	limit, err := queryInt(q, "limit", DefaultEventsLimit, 1, MaxEventsLimit)
	if err != nil {
		return err
	}
	rec, err := s.store.Load(r.Context(), id, after+1)
	if err != nil {
		return fmt.Errorf("load %s: %w", id, err)
	}
	events := rec.Events
	if int64(len(events)) > limit {
		events = events[:limit]
	}
	if events == nil {
		events = []cairn.Event{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": events, "last_seq": rec.Info.LastSeq})
	return nil
}

// eventIn is an event as a client sends it: v, seq and at may be left out
// (1, the next seq, the server's clock).
type eventIn struct {
	V    *int            `json:"v"`
	Seq  *int64          `json:"seq"`
	At   *string         `json:"at"`
	Kind string          `json:"kind"`
	Run  string          `json:"run"`
	Data json.RawMessage `json:"data"`
}

func (s *Server) apiAppend(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		ExpectSeq *int64            `json:"expect_seq"`
		Events    []json.RawMessage `json:"events"`
	}
	id, err := pathBody(r, &req, false)
	if err != nil {
		return err
	}
	if req.ExpectSeq == nil {
		return badRequest("expect_seq", "expect_seq is missing: give the session's last seq as you know it (0 for a new session)")
	}
	expect := *req.ExpectSeq
	if expect < 0 {
		return badRequest("expect_seq", "expect_seq is %d, it cannot be negative", expect)
	}
	if len(req.Events) == 0 {
		return badRequest("events", "events is empty: an append needs at least one event")
	}
	if len(req.Events) > s.cfg.Limits.MaxAppendEvents {
		return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large", Field: "events",
			Message: fmt.Sprintf("%d events in one append, the limit is %d", len(req.Events), s.cfg.Limits.MaxAppendEvents)}
	}
	now := time.Now().UTC()
	events := make([]cairn.Event, len(req.Events))
	for i, raw := range req.Events {
		e, err := parseEvent(raw, fmt.Sprintf("events[%d]", i), expect+int64(i)+1, now)
		if err != nil {
			return err
		}
		events[i] = e
	}
	events, err = driver.CheckAppend(s.cfg.Limits, id, expect, events)
	if err != nil {
		return err
	}
	if s.runs.busy(id) {
		return busyError(id)
	}
	if err := s.store.Append(r.Context(), id, expect, events...); err != nil {
		if errors.Is(err, cairn.ErrConflict) {
			return s.conflict(r.Context(), id, err)
		}
		return err
	}
	s.hub.notify(id)
	writeJSON(w, http.StatusOK, map[string]any{"last_seq": expect + int64(len(events))})
	return nil
}

// parseEvent reads one event of an append strictly; field names where it
// sits in the request ("events[2]"). Errors are 400s naming the field.
func parseEvent(raw json.RawMessage, field string, seq int64, now time.Time) (cairn.Event, error) {
	var in eventIn
	if err := decodeJSON(raw, &in, field); err != nil {
		return cairn.Event{}, err
	}
	e := cairn.Event{V: cairn.FormatVersion, Seq: seq, At: now, Kind: cairn.Kind(in.Kind), Run: in.Run, Data: in.Data}
	if in.V != nil && *in.V != cairn.FormatVersion {
		return e, eventError(field+".v", "v is %d; this server writes format version %d", *in.V, cairn.FormatVersion)
	}
	if in.Seq != nil && *in.Seq != seq {
		return e, eventError(field+".seq", "seq is %d where %d comes next (expect_seq + 1 + the event's index)", *in.Seq, seq)
	}
	if in.At != nil {
		t, err := time.Parse(time.RFC3339Nano, *in.At)
		if err != nil {
			return e, eventError(field+".at", "at %q is not an RFC 3339 time", *in.At)
		}
		e.At = t.UTC()
	}
	if in.Kind == "" {
		return e, eventError(field+".kind", "kind is missing")
	}
	if !e.Kind.Known() {
		return e, eventError(field+".kind", "unknown kind %q", in.Kind)
	}
	if len(in.Data) == 0 {
		return e, eventError(field+".data", "data is missing")
	}
	if _, err := e.Decode(); err != nil {
		f, msg := fieldOf(err.Error())
		return e, eventError(join(field+".data", f), "%s: %s", e.Kind, msg)
	}
	return e, nil
}

func eventError(field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "invalid_event", Field: field, Message: field + ": " + fmt.Sprintf(format, args...)}
}

// conflict is the answer to an append at a stale expected seq: 409 with
// the session's last seq now.
func (s *Server) conflict(ctx context.Context, id string, err error) error {
	ae := toAPIError(err)
	if rec, lerr := s.store.Stat(ctx, id); lerr == nil {
		last := rec.LastSeq
		ae.LastSeq = &last
	}
	return ae
}

func busyError(id string) error {
	return &apiError{Status: http.StatusConflict, Code: "busy",
		Message: fmt.Sprintf("session %s is being run by this server", id), Hint: "wait for the run to end"}
}
