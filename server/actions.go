package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/sessions"
)

// The actions: decide on a pending call, resume a run, fork, export and
// import. The API and the pages share them.

// decision is a person's answer to a pending tool call.
type decision struct {
	CallID   string `json:"call_id"`
	Approved *bool  `json:"approved"`
	Note     string `json:"note"`
	Resume   bool   `json:"resume"`
}

// decideResult says what a decision did.
type decideResult struct {
	LastSeq int64    `json:"last_seq"`
	Resumed bool     `json:"resumed"`
	Waiting []string `json:"waiting"` // calls still awaiting a decision
}

// decide records a decision (approval.decided, through the agent's
// Session.Approve) and, when asked and no other call awaits a decision,
// resumes the run.
func (s *Server) decide(ctx context.Context, id string, d decision) (*decideResult, error) {
	if d.CallID == "" {
		return nil, badRequest("call_id", "call_id is missing: name the pending tool call to decide on")
	}
	if d.Approved == nil {
		return nil, badRequest("approved", "approved is missing: true to approve the call, false to deny it")
	}
	if d.Resume && s.cfg.Agent == nil {
		return nil, noAgent()
	}
	if s.runs.busy(id) {
		return nil, busyError(id)
	}
	ag := &agent.Agent{Store: s.store, OnError: agent.Fail, Logger: s.log}
	sess, err := ag.Resume(ctx, id)
	if err != nil {
		return nil, err
	}
	st := sess.State()
	i := slices.IndexFunc(st.Pending, func(p cairn.PendingCall) bool { return p.ID == d.CallID })
	if i < 0 {
		return nil, &apiError{Status: http.StatusConflict, Code: "not_pending", Field: "call_id",
			Message: fmt.Sprintf("session %s has no pending tool call %q", id, d.CallID)}
	}
	if prev, ok := st.Approvals[d.CallID]; ok {
		verb := "denied"
		if prev.Approved {
			verb = "approved"
		}
		return nil, &apiError{Status: http.StatusConflict, Code: "decided", Field: "call_id",
			Message: fmt.Sprintf("tool call %s of session %s was already %s", d.CallID, id, verb)}
	}
	if err := sess.Approve(ctx, d.CallID, *d.Approved, d.Note); err != nil {
		if errors.Is(err, cairn.ErrConflict) {
			return nil, s.conflict(ctx, id, err)
		}
		return nil, err
	}
	s.hub.notify(id)
	st = sess.State()
	res := &decideResult{LastSeq: st.LastSeq, Waiting: undecided(st)}
	if d.Resume && len(res.Waiting) == 0 {
		if err := s.startRun(ctx, id, ""); err != nil {
			return nil, err
		}
		res.Resumed = true
	}
	return res, nil
}

// undecided returns the pending calls that await a person's decision.
func undecided(st *cairn.State) []string {
	out := []string{}
	for _, p := range st.Pending {
		if _, ok := st.Approvals[p.ID]; p.Approval && !ok {
			out = append(out, p.ID)
		}
	}
	return out
}

// startRun resumes session id's run (prompt "") or continues it with a
// new prompt, in the background, with the configured agent.
func (s *Server) startRun(ctx context.Context, id, prompt string) error {
	if s.cfg.Agent == nil {
		return noAgent()
	}
	if s.runs.busy(id) {
		return busyError(id)
	}
	ag, err := s.cfg.Agent(s.store)
	if err != nil {
		return fmt.Errorf("build the agent: %w", err)
	}
	sess, err := ag.Resume(ctx, id)
	if err != nil {
		return err
	}
	st := sess.State()
	if prompt == "" {
		switch st.Status {
		case cairn.StatusRunning, cairn.StatusInterrupted, cairn.StatusAwaiting:
		default:
			return &apiError{Status: http.StatusConflict, Code: "nothing_to_resume",
				Message: fmt.Sprintf("session %s has no unfinished run (status %s)", id, st.Status), Hint: "give a prompt to continue it"}
		}
		if w := undecided(st); len(w) > 0 {
			return &apiError{Status: http.StatusConflict, Code: "awaiting_approval",
				Message: fmt.Sprintf("session %s waits for a decision on %s", id, strings.Join(w, ", ")),
				Hint:    "approve or deny each pending call first"}
		}
	}
	cl, err := s.claim(ctx, sess)
	if err != nil {
		return err
	}
	release := func() {
		if cl != nil {
			if err := cl.Release(context.Background()); err != nil {
				s.log.Warn("release the session's claim", "session", id, "err", err)
			}
		}
	}
	ok := s.runs.start(id, func(rctx context.Context) {
		defer release()
		defer s.hub.notify(id)
		var (
			res *agent.Result
			err error
		)
		if prompt == "" {
			res, err = sess.ResumeRun(rctx)
		} else {
			res, err = sess.Run(rctx, prompt, agent.Continue())
		}
		switch {
		case err != nil:
			s.log.Warn("run ended with an error", "session", id, "err", err)
		case res != nil && res.Unsaved > 0:
			s.log.Warn("run ended with events the store does not hold", "session", id, "unsaved", res.Unsaved, "err", res.StoreError)
		}
	})
	if !ok {
		release()
		return busyError(id)
	}
	s.hub.notify(id)
	return nil
}

func noAgent() error {
	return &apiError{Status: http.StatusNotImplemented, Code: "no_agent",
		Message: "this server has no agent to run sessions with", Hint: "cairn serve configures one from cairn.toml"}
}

// claim takes the session for a run: Config.Claim, or the session's lease
// on a store with leases.
func (s *Server) claim(ctx context.Context, sess *agent.Session) (*agent.Claim, error) {
	if s.cfg.Claim != nil {
		return s.cfg.Claim(ctx, sess)
	}
	if _, ok := s.store.(cairn.Leaser); !ok {
		return nil, nil
	}
	return sess.Claim(ctx, agent.ClaimOptions{})
}

// fork copies session id's events up to seq at (0: all) into a new
// session as (empty: a new ID), labelled forked_from=id, with
// sessions.Fork. If an append fails the new session is deleted again.
func (s *Server) fork(ctx context.Context, id string, at int64, as string) (*sessions.Forked, error) {
	if as != "" {
		if err := validID("as", as); err != nil {
			return nil, err
		}
	}
	f, err := sessions.Fork(ctx, s.store, id, sessions.ForkOptions{At: at, As: as, MaxAppendEvents: s.cfg.Limits.MaxAppendEvents})
	if re, ok := errors.AsType[*sessions.RangeError](err); ok {
		return nil, badRequest("at", "at=%d is outside the session's events 1..%d", re.At, re.Last)
	}
	if err != nil {
		return nil, err
	}
	s.snapshot(ctx, f.ID, f.Events)
	return f, nil
}

// snapshot gives session id, just written whole by a fork or an import,
// the snapshot the policy asks for (agent.WriteSnapshot). A failure is a
// warning: the session is whole without it.
func (s *Server) snapshot(ctx context.Context, id string, events []cairn.Event) {
	if _, err := agent.WriteSnapshot(ctx, s.store, id, events, s.cfg.SnapshotEvents, s.cfg.SnapshotBytes); err != nil {
		s.log.Warn("a snapshot was not written; the session opens by replaying its events until the agent writes one", "session", id, "err", err)
	}
}

// export writes session id in format f and returns its report.
func (s *Server) export(ctx context.Context, w io.Writer, id string, f sessions.Format) (*sessions.Report, error) {
	rec, err := s.loadAll(ctx, id)
	if err != nil {
		return nil, err
	}
	m, err := cairn.NewMemory(rec.Events...)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", id, err)
	}
	m.Session = &cairn.SessionMeta{ID: id, CreatedAt: rec.Info.CreatedAt, Labels: rec.Info.Labels}
	return sessions.Export(w, f, m)
}

// importResult is what an import wrote.
type importResult struct {
	ID     string          `json:"id"`
	Events int             `json:"events"`
	Format sessions.Format `json:"format"`
	Report reportJSON      `json:"report"`
}

type reportJSON struct {
	Dropped   []string `json:"dropped"`
	Generated []string `json:"generated"`
	Notes     []string `json:"notes"`
}

func toReport(r *sessions.Report) reportJSON {
	out := reportJSON{Dropped: []string{}, Generated: []string{}, Notes: []string{}}
	if r != nil {
		out.Dropped = append(out.Dropped, r.Dropped...)
		out.Generated = append(out.Generated, r.Generated...)
		out.Notes = append(out.Notes, r.Notes...)
	}
	return out
}

// importDoc validates data fully and writes it as a new session, as
// `cairn sessions import` does.
func (s *Server) importDoc(ctx context.Context, data []byte, format, as string) (*importResult, error) {
	var f sessions.Format
	if format != "" {
		var err error
		if f, err = sessions.ParseFormat(format); err != nil {
			return nil, badRequest("format", "%v", err)
		}
	}
	if as != "" {
		if err := validID("as", as); err != nil {
			return nil, err
		}
	}
	in, err := sessions.ImportInto(ctx, s.store, data, f, sessions.ImportOptions{ID: as, MaxBytes: int(s.cfg.MaxImportBytes), Limits: s.cfg.Limits})
	if err != nil {
		return nil, err
	}
	s.snapshot(ctx, in.ID, nil)
	return &importResult{ID: in.ID, Events: in.Memory.Len(), Format: in.Report.Format, Report: toReport(in.Report)}, nil
}

// deleteSession erases a session that no run of this server is running.
func (s *Server) deleteSession(ctx context.Context, id string) error {
	if s.runs.busy(id) {
		return busyError(id)
	}
	if err := s.store.Delete(ctx, id); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	s.cache.drop(id)
	s.hub.notify(id)
	return nil
}

// The API's handlers of the actions.

func (s *Server) apiDecide(w http.ResponseWriter, r *http.Request) error {
	var d decision
	id, err := pathBody(r, &d, false)
	if err != nil {
		return err
	}
	res, err := s.decide(r.Context(), id, d)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) apiResume(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Prompt string `json:"prompt"`
	}
	id, err := pathBody(r, &req, true)
	if err != nil {
		return err
	}
	if err := s.startRun(r.Context(), id, strings.TrimSpace(req.Prompt)); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"id": id, "running": true})
	return nil
}

func (s *Server) apiFork(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		At int64  `json:"at"`
		As string `json:"as"`
	}
	id, err := pathBody(r, &req, true)
	if err != nil {
		return err
	}
	res, err := s.fork(r.Context(), id, req.At, req.As)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/sessions/"+res.ID)
	writeJSON(w, http.StatusCreated, res)
	return nil
}

func (s *Server) apiExport(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	name := r.URL.Query().Get("format")
	if name == "" {
		name = string(sessions.Cairn)
	}
	f, err := sessions.ParseFormat(name)
	if err != nil {
		return badRequest("format", "%v", err)
	}
	var buf bytes.Buffer
	rep, err := s.export(r.Context(), &buf, id, f)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.%s.json"`, id, f))
	if line := rep.String(); line != "" {
		h.Set("Cairn-Export-Report", asciiHeader(line))
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// asciiHeader keeps a header value to printable ASCII.
func asciiHeader(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}

func (s *Server) apiImport(w http.ResponseWriter, r *http.Request) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return badRequest("", "the request needs a document as its body")
	}
	q := r.URL.Query()
	res, err := s.importDoc(r.Context(), data, q.Get("format"), q.Get("as"))
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/sessions/"+res.ID)
	writeJSON(w, http.StatusCreated, res)
	return nil
}
