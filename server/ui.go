package server

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/sessions"
)

// The inspector's pages and form actions.

// PageEvents is how many events a page of the timeline shows.
const PageEvents = 200

// stateMessages is how many of the latest messages the state panel shows.
const stateMessages = 30

func (s *Server) uiHome(w http.ResponseWriter, r *http.Request) error {
	seeOther(w, r, "/sessions")
	return nil
}

type loginData struct {
	base
	Next  string
	Error string
}

func (s *Server) uiLogin(w http.ResponseWriter, r *http.Request) error {
	next := safeNext(r.URL.Query().Get("next"))
	if code := r.URL.Query().Get("code"); code != "" {
		if s.auth.useCode(code) {
			s.auth.signIn(w, r)
			seeOther(w, r, next)
			return nil
		}
		d := loginData{base: s.base(r, "Sign in", "login"), Next: next,
			Error: "This sign-in link was used already or is not valid. Paste the access token instead."}
		return s.render(w, http.StatusUnauthorized, "login.html", d)
	}
	return s.render(w, http.StatusOK, "login.html", loginData{base: s.base(r, "Sign in", "login"), Next: next})
}

func (s *Server) uiLoginPost(w http.ResponseWriter, r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r) {
		return &apiError{Status: http.StatusForbidden, Code: "csrf", Message: "the sign-in comes from another site (Origin " + o + ")"}
	}
	if err := r.ParseForm(); err != nil {
		return formError(err)
	}
	next := safeNext(r.PostForm.Get("next"))
	if !s.auth.validToken(strings.TrimSpace(r.PostForm.Get("token"))) {
		d := loginData{base: s.base(r, "Sign in", "login"), Next: next, Error: "That is not a valid access token."}
		return s.render(w, http.StatusUnauthorized, "login.html", d)
	}
	s.auth.signIn(w, r)
	seeOther(w, r, next)
	return nil
}

func (s *Server) uiLogout(w http.ResponseWriter, r *http.Request) error {
	s.auth.signOut(w, r)
	seeOther(w, r, "/login")
	return nil
}

type sessionsData struct {
	base
	Items    []sessionJSON
	Statuses []cairn.Status
	Q        string
	Text     string      // a search of the sessions' text (text=), whose results Found holds
	Found    []foundJSON // the sessions the search found, best first
	Words    map[string]bool
	Status   string
	Label    string
	Cursor   string
	NextURL  string
	Filtered bool
	Live     bool
}

func (s *Server) uiSessions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if strings.TrimSpace(q.Get("text")) != "" {
		return s.uiSearch(w, r)
	}
	if q.Get("limit") == "" {
		q.Set("limit", strconv.Itoa(DefaultListLimit))
	}
	lq, err := parseListQuery(q)
	if err != nil {
		return err
	}
	items, next, err := s.list(r.Context(), lq)
	if err != nil {
		return err
	}
	d := sessionsData{base: s.base(r, "Sessions", "sessions"), Items: items, Statuses: Statuses,
		Q: q.Get("q"), Status: q.Get("status"), Label: q.Get("label"), Cursor: q.Get("cursor")}
	d.Filtered = d.Q != "" || d.Status != "" || d.Label != ""
	d.Live = d.Cursor == ""
	if next != "" {
		nq := url.Values{}
		for _, k := range []string{"q", "status", "label"} {
			if v := q.Get(k); v != "" {
				nq.Set(k, v)
			}
		}
		nq.Set("cursor", next)
		d.NextURL = "/sessions?" + nq.Encode()
	}
	if r.Header.Get("X-Cairn-Fragment") == "session-rows" {
		return s.render(w, http.StatusOK, "session-rows", d)
	}
	return s.render(w, http.StatusOK, "sessions.html", d)
}

// sessionData is the session page: its head (info and actions), a window
// of its timeline and the state panel.
type sessionData struct {
	base
	ID       string
	Info     sessionJSON
	Current  *cairn.State // at the last seq
	Waiting  []cairn.PendingCall
	Resume   bool // the run can be resumed here
	Running  bool // this server runs it now
	Formats  []sessions.Format
	Rows     []Row
	From     int64
	To       int64
	Last     int64
	IsLatest bool
	Pager    pager
	State    stateView
}

type pager struct {
	First, Older, Newer, Latest string
}

// stateView is the state panel: the state at seq At.
type stateView struct {
	base
	ID       string
	At       int64
	Last     int64
	State    *cairn.State
	Messages []cairn.Message
	Earlier  int
	Vars     []variable // the first stateVars, by name
	MoreVars int
	FromSeq  int64
}

// variable is one session variable as the state panel shows it.
type variable struct{ Key, Value string }

// stateVars is how many variables the state panel shows.
const stateVars = 100

func (s *Server) uiSession(w http.ResponseWriter, r *http.Request) error {
	d, err := s.sessionData(r)
	if err != nil {
		return err
	}
	return s.render(w, http.StatusOK, "session.html", d)
}

func (s *Server) sessionData(r *http.Request) (*sessionData, error) {
	id, err := pathID(r)
	if err != nil {
		return nil, err
	}
	rec, err := s.loadAll(r.Context(), id)
	if err != nil {
		return nil, err
	}
	events := rec.Events
	last := int64(len(events))
	q := r.URL.Query()
	from, err := queryInt(q, "from", max(1, last-PageEvents+1), 1, max(last, 1))
	if err != nil {
		return nil, err
	}
	at, err := parseSeqAt(q, "at", last)
	if err != nil {
		return nil, err
	}
	to := min(last, from+PageEvents-1)
	tl := newTimeline()
	tl.skip(events[:from-1])
	d := &sessionData{ID: id, Info: s.sessionJSON(r.Context(), rec.Info), From: from, To: to, Last: last,
		IsLatest: to == last, Formats: sessions.Formats, Running: s.runs.busy(id)}
	d.base = s.base(r, "Session "+id, "session")
	if last > 0 {
		d.Rows = tl.rows(events[from-1 : to])
	}
	if d.Current, err = rec.stateAt(last); err != nil {
		return nil, err
	}
	s.head(d)
	base := "/sessions/" + id
	if from > 1 {
		d.Pager.First = base + "?from=1"
		d.Pager.Older = base + "?from=" + strconv.FormatInt(max(1, from-PageEvents), 10)
	}
	if to < last {
		d.Pager.Newer = base + "?from=" + strconv.FormatInt(to+1, 10)
		d.Pager.Latest = base
	}
	d.State, err = s.stateView(r, id, rec, at)
	if err != nil {
		return nil, err
	}
	d.State.FromSeq = from
	return d, nil
}

// head fills in what the page's head needs from the current state.
func (s *Server) head(d *sessionData) {
	st := d.Current
	for _, p := range st.Pending {
		if _, ok := st.Approvals[p.ID]; p.Approval && !ok {
			d.Waiting = append(d.Waiting, p)
		}
	}
	switch st.Status {
	case cairn.StatusRunning, cairn.StatusInterrupted, cairn.StatusAwaiting:
		d.Resume = d.Agent && !d.Running && len(d.Waiting) == 0
	}
}

func (s *Server) stateView(r *http.Request, id string, rec *loaded, at int64) (stateView, error) {
	st, err := rec.stateAt(at)
	if err != nil {
		return stateView{}, err
	}
	v := stateView{base: s.base(r, "", "session"), ID: id, At: at, Last: int64(len(rec.Events)), State: st, Messages: st.Messages}
	if n := len(v.Messages); n > stateMessages {
		v.Earlier = n - stateMessages
		v.Messages = v.Messages[n-stateMessages:]
	}
	keys := slices.Sorted(maps.Keys(st.Variables))
	if len(keys) > stateVars {
		v.MoreVars = len(keys) - stateVars
		keys = keys[:stateVars]
	}
	for _, k := range keys {
		v.Vars = append(v.Vars, variable{Key: k, Value: string(st.Variables[k])})
	}
	return v, nil
}

// uiRows is the timeline's rows after a seq, for the page's live tail.
// The headers Cairn-Last-Seq and Cairn-Status say where the session is.
func (s *Server) uiRows(w http.ResponseWriter, r *http.Request) error {
	_, rec, err := s.loadPath(r)
	if err != nil {
		return err
	}
	last := int64(len(rec.Events))
	after, err := queryInt(r.URL.Query(), "after", 0, 0, last)
	if err != nil {
		return err
	}
	to := min(last, after+PageEvents)
	tl := newTimeline()
	tl.skip(rec.Events[:after])
	rows := tl.rows(rec.Events[after:to])
	w.Header().Set("Cairn-Last-Seq", strconv.FormatInt(last, 10))
	w.Header().Set("Cairn-Status", string(displayed(rec.Info).Status))
	return s.render(w, http.StatusOK, "rows", rows)
}

// uiState is the state panel at a seq, for the time-travel control.
func (s *Server) uiState(w http.ResponseWriter, r *http.Request) error {
	id, rec, err := s.loadPath(r)
	if err != nil {
		return err
	}
	at, err := parseSeqAt(r.URL.Query(), "at", int64(len(rec.Events)))
	if err != nil {
		return err
	}
	v, err := s.stateView(r, id, rec, at)
	if err != nil {
		return err
	}
	v.FromSeq, _ = queryInt(r.URL.Query(), "from", 0, 0, 1<<62)
	return s.render(w, http.StatusOK, "state", v)
}

// uiHead is the page's head (status, pending decisions, actions), for
// the live page when the session's status changes.
func (s *Server) uiHead(w http.ResponseWriter, r *http.Request) error {
	id, rec, err := s.loadPath(r)
	if err != nil {
		return err
	}
	d := &sessionData{ID: id, Info: s.sessionJSON(r.Context(), rec.Info), Last: int64(len(rec.Events)),
		Formats: sessions.Formats, Running: s.runs.busy(id)}
	d.base = s.base(r, "", "session")
	if d.Current, err = rec.stateAt(d.Last); err != nil {
		return err
	}
	s.head(d)
	return s.render(w, http.StatusOK, "session-head", d)
}
