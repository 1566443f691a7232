package server

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cairnhq/cairn"
)

// uiApprove is the form action that decides on a pending call (decide).
//
// The inspector's form actions are uiApprove, uiResume, uiFork, uiDelete
// and uiImport. Each is a POST that the dispatcher has checked (cookie,
// CSRF token, read-only mode); each ends with a redirect to the page that
// shows its outcome, or with an error page.
func (s *Server) uiApprove(w http.ResponseWriter, r *http.Request) error {
	id, err := pathForm(r)
	if err != nil {
		return err
	}
	f := r.PostForm
	var approved bool
	switch f.Get("decision") {
	case "approve":
		approved = true
	case "deny":
	default:
		return badRequest("decision", "decision is %q; want approve or deny", f.Get("decision"))
	}
	res, err := s.decide(r.Context(), id, decision{CallID: f.Get("call"), Approved: &approved, Note: f.Get("note"), Resume: f.Get("resume") != ""})
	if err != nil {
		return err
	}
	n := "decided"
	if res.Resumed {
		n = "resumed"
	}
	seeOther(w, r, "/sessions/"+id+"?notice="+n)
	return nil
}

func (s *Server) uiResume(w http.ResponseWriter, r *http.Request) error {
	id, err := pathForm(r)
	if err != nil {
		return err
	}
	if err := s.startRun(r.Context(), id, strings.TrimSpace(r.PostForm.Get("prompt"))); err != nil {
		return err
	}
	seeOther(w, r, "/sessions/"+id+"?notice=resumed")
	return nil
}

func (s *Server) uiFork(w http.ResponseWriter, r *http.Request) error {
	id, err := pathForm(r)
	if err != nil {
		return err
	}
	at, err := queryInt(r.PostForm, "at", 0, 1, 1<<62)
	if err != nil {
		return err
	}
	res, err := s.fork(r.Context(), id, at, strings.TrimSpace(r.PostForm.Get("as")))
	if err != nil {
		return err
	}
	seeOther(w, r, "/sessions/"+res.ID+"?notice=forked&id="+url.QueryEscape(id))
	return nil
}

func (s *Server) uiDelete(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if r.PostFormValue("confirm") != id {
		return badRequest("confirm", "type the session's ID to confirm that it is to be deleted")
	}
	if err := s.deleteSession(r.Context(), id); err != nil {
		return err
	}
	seeOther(w, r, "/sessions?notice=deleted&id="+url.QueryEscape(id))
	return nil
}

func (s *Server) uiImport(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		return formError(err)
	}
	file, _, err := r.FormFile("file")
	if err != nil {
		return badRequest("file", "choose a file to import")
	}
	defer file.Close()
	data, err := io.ReadAll(file)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return badRequest("file", "the file is empty")
	}
	res, err := s.importDoc(r.Context(), data, r.FormValue("format"), strings.TrimSpace(r.FormValue("as")))
	if err != nil {
		return err
	}
	seeOther(w, r, "/sessions/"+res.ID+"?notice=imported")
	return nil
}

// compareData compares the states at two seqs of a session.
type compareData struct {
	base
	ID       string
	A, B     int64
	Last     int64
	Fields   []fieldDiff
	Vars     []varDiff
	Added    []cairn.Message // messages in B's state that A's lacks
	Removed  []cairn.Message // messages in A's state that B's lacks
	PendingA []cairn.PendingCall
	PendingB []cairn.PendingCall
}

type fieldDiff struct {
	Name, A, B string
	Changed    bool
}

type varDiff struct {
	Key, A, B string
	Change    string // added, removed, changed, same
}

func (s *Server) uiCompare(w http.ResponseWriter, r *http.Request) error {
	id, rec, err := s.loadPath(r)
	if err != nil {
		return err
	}
	last := int64(len(rec.Events))
	q := r.URL.Query()
	a, err := parseSeqAt(q, "a", last)
	if err != nil {
		return err
	}
	if q.Get("a") == "" {
		a = max(0, last-1)
	}
	b, err := parseSeqAt(q, "b", last)
	if err != nil {
		return err
	}
	sa, err := rec.stateAt(a)
	if err != nil {
		return err
	}
	sb, err := rec.stateAt(b)
	if err != nil {
		return err
	}
	d := compareState(sa, sb)
	d.base, d.ID, d.A, d.B, d.Last = s.base(r, "Compare "+id, "compare"), id, a, b, last
	return s.render(w, http.StatusOK, "compare.html", d)
}

// compareState lists what differs between two states.
func compareState(a, b *cairn.State) *compareData {
	d := &compareData{PendingA: a.Pending, PendingB: b.Pending}
	field := func(name, x, y string) {
		d.Fields = append(d.Fields, fieldDiff{Name: name, A: x, B: y, Changed: x != y})
	}
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	field("status", string(a.Status), string(b.Status))
	field("last seq", i(a.LastSeq), i(b.LastSeq))
	field("steps", i(int64(a.Steps)), i(int64(b.Steps)))
	field("messages", i(int64(len(a.Messages))), i(int64(len(b.Messages))))
	field("pending calls", i(int64(len(a.Pending))), i(int64(len(b.Pending))))
	field("input tokens", i(a.Usage.InputTokens), i(b.Usage.InputTokens))
	field("output tokens", i(a.Usage.OutputTokens), i(b.Usage.OutputTokens))
	field("run", a.Run, b.Run)
	field("interrupted", a.Interrupt, b.Interrupt)
	field("output", a.Output, b.Output)
	keys := map[string]bool{}
	for k := range a.Variables {
		keys[k] = true
	}
	for k := range b.Variables {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		x, inA := a.Variables[k]
		y, inB := b.Variables[k]
		v := varDiff{Key: k, A: string(x), B: string(y), Change: "same"}
		switch {
		case !inA:
			v.Change = "added"
		case !inB:
			v.Change = "removed"
		case !bytes.Equal(x, y):
			v.Change = "changed"
		}
		d.Vars = append(d.Vars, v)
	}
	inA := map[int64]bool{}
	for _, m := range a.Messages {
		inA[m.Seq] = true
	}
	inB := map[int64]bool{}
	for _, m := range b.Messages {
		inB[m.Seq] = true
		if !inA[m.Seq] {
			d.Added = append(d.Added, m)
		}
	}
	for _, m := range a.Messages {
		if !inB[m.Seq] {
			d.Removed = append(d.Removed, m)
		}
	}
	d.Added = clipMessages(d.Added)
	d.Removed = clipMessages(d.Removed)
	return d
}

// clipMessages keeps a comparison's page small: the last 100 messages.
func clipMessages(ms []cairn.Message) []cairn.Message {
	if len(ms) > 100 {
		return slices.Clone(ms[len(ms)-100:])
	}
	return ms
}
