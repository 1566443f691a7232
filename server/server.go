package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/longterm"
)

// Defaults of Config.
const (
	DefaultPollInterval = 500 * time.Millisecond
	DefaultMaxBodyBytes = 16 << 20 // an append or any other JSON request
	DefaultMaxImport    = 64 << 20 // an imported document (formats.DefaultMaxBytes)
	MinTokenLength      = 16       // the fewest characters of an access token (CheckToken)
)

// Config configures a Server. Store and at least one token are required.
type Config struct {
	// Store holds the sessions the server shows and changes. The server
	// does not close it.
	Store cairn.Store
	// Memory is the long-term memory the server serves under /api/memory
	// and shows on the inspector's memory page. Nil: those routes answer
	// 404 (code no_memory) and the pages do not link to it. The server
	// does not close it.
	Memory longterm.Store
	// Tokens are the access tokens a request may carry (Authorization:
	// Bearer TOKEN), each at least MinTokenLength characters long and not
	// guessable (CheckToken).
	Tokens []string
	// ReadOnly refuses every request that would change the store
	// (403, code read_only); the pages hide their actions.
	ReadOnly bool
	// Agent builds the agent that resumes runs (the resume action, and
	// approvals given with "resume"). Nil: resuming is not offered and the
	// API answers 501.
	Agent func(cairn.Store) (*agent.Agent, error)
	// Claim takes a session before the server runs it, as the cairn
	// command does (a lock file beside a local store, a lease). Nil: the
	// session's lease when the store has leases (agent.Session.Claim),
	// nothing otherwise.
	Claim func(context.Context, *agent.Session) (*agent.Claim, error)
	// AllowedHosts, when not empty, are the only Host headers accepted
	// ("127.0.0.1:7420", "localhost:7420"): a server bound to loopback
	// refuses a page reached through another name (DNS rebinding).
	AllowedHosts []string
	// PollInterval is how often an event stream asks the store for new
	// events; 0 means DefaultPollInterval. Appends made through this
	// server wake the streams at once.
	PollInterval time.Duration
	// MaxBodyBytes bounds a request body; 0 means DefaultMaxBodyBytes.
	// Imports are bounded by MaxImportBytes instead.
	MaxBodyBytes int64
	// MaxImportBytes bounds an imported document; 0: DefaultMaxImport.
	MaxImportBytes int64
	// Limits bound the events of an append, as the store's own do.
	Limits cairn.Limits
	// SnapshotEvents and SnapshotBytes are the snapshot policy of the
	// sessions a fork or an import writes whole, as agent.Agent's fields
	// of those names (see agent.WriteSnapshot): 0 for the defaults, -1 in
	// either for no snapshot.
	SnapshotEvents, SnapshotBytes int
	// Logger receives the server's warnings; nil means slog.Default().
	Logger *slog.Logger
}

// Server serves the inspector and the JSON API over one store. It is an
// http.Handler; Close ends its event streams and the runs it started.
type Server struct {
	cfg    Config
	store  cairn.Store
	log    *slog.Logger
	mux    *http.ServeMux
	routes []route
	auth   *authority
	hub    *hub
	runs   *runs
	pages  *pages
	cache  *eventCache

	closeOnce sync.Once
	closing   chan struct{}
}

// New returns a Server for cfg. It refuses a config without a store or
// without a token, and tokens that CheckToken refuses.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: no store")
	}
	if len(cfg.Tokens) == 0 {
		return nil, errors.New("server: no access token; every request needs one")
	}
	for i, t := range cfg.Tokens {
		if err := CheckToken(t); err != nil {
			return nil, fmt.Errorf("server: access token %d %w", i+1, err)
		}
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxImportBytes <= 0 {
		cfg.MaxImportBytes = DefaultMaxImport
	}
	cfg.Limits = cfg.Limits.WithDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{
		cfg:     cfg,
		store:   cfg.Store,
		log:     cfg.Logger,
		auth:    newAuthority(cfg.Tokens),
		hub:     newHub(),
		cache:   newEventCache(8),
		closing: make(chan struct{}),
	}
	s.runs = newRuns()
	p, err := loadPages()
	if err != nil {
		return nil, err
	}
	s.pages = p
	s.routes = s.table()
	s.mux = http.NewServeMux()
	byPattern := map[string][]route{}
	var order []string
	for _, rt := range s.routes {
		if _, ok := byPattern[rt.pattern]; !ok {
			order = append(order, rt.pattern)
		}
		byPattern[rt.pattern] = append(byPattern[rt.pattern], rt)
	}
	for _, p := range order {
		s.mux.Handle(p, s.dispatch(byPattern[p]))
	}
	s.mux.Handle("/", http.HandlerFunc(s.notFound))
	return s, nil
}

// LoginURL returns a one-time link into the inspector under base (such as
// "http://127.0.0.1:7420"): opening it sets the browser's cookie and the
// link stops working.
func (s *Server) LoginURL(base string) string {
	return strings.TrimSuffix(base, "/") + "/login?code=" + s.auth.newCode()
}

// Close ends the event streams and interrupts the runs the server started
// (each records its run.interrupted), waiting for them up to ctx's end.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() { close(s.closing) })
	return s.runs.stop(ctx)
}

// ServeHTTP serves one request: the security headers, the Host check,
// authentication, CSRF protection and read-only mode come first.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // a form post keeps its Origin; no address leaves the site
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	if !s.hostAllowed(r.Host) {
		s.fail(w, r, &apiError{Status: http.StatusForbidden, Code: "bad_host",
			Message: fmt.Sprintf("host %q is not one this server answers to", r.Host),
			Hint:    "open the address cairn serve printed"})
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) hostAllowed(host string) bool {
	if len(s.cfg.AllowedHosts) == 0 {
		return true
	}
	for _, h := range s.cfg.AllowedHosts {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// route is one method and pattern of the server.
type route struct {
	method  string
	pattern string
	api     bool  // under /api: JSON errors
	write   bool  // changes the store: refused in read-only mode
	public  bool  // served without a token (the login page, static files)
	maxBody int64 // 0: Config.MaxBodyBytes
	handle  func(http.ResponseWriter, *http.Request) error
}

// table lists every route. The OpenAPI document describes the api ones
// and a test checks that the two agree.
func (s *Server) table() []route {
	api := func(method, pattern string, write bool, h func(http.ResponseWriter, *http.Request) error) route {
		return route{method: method, pattern: pattern, api: true, write: write, handle: h}
	}
	ui := func(method, pattern string, write bool, h func(http.ResponseWriter, *http.Request) error) route {
		return route{method: method, pattern: pattern, write: write, handle: h}
	}
	imp := api("POST", "/api/import", true, s.apiImport)
	imp.maxBody = s.cfg.MaxImportBytes
	uimp := ui("POST", "/import", true, s.uiImport)
	uimp.maxBody = s.cfg.MaxImportBytes
	return []route{
		api("GET", "/api/openapi.json", false, s.apiOpenAPI),
		api("GET", "/api/sessions", false, s.apiList),
		api("POST", "/api/sessions", true, s.apiCreate),
		api("GET", "/api/sessions/{id}", false, s.apiGet),
		api("DELETE", "/api/sessions/{id}", true, s.apiDelete),
		api("GET", "/api/sessions/{id}/state", false, s.apiState),
		api("GET", "/api/sessions/{id}/events", false, s.apiEvents),
		api("POST", "/api/sessions/{id}/events", true, s.apiAppend),
		api("GET", "/api/sessions/{id}/stream", false, s.apiStream),
		api("POST", "/api/sessions/{id}/approvals", true, s.apiDecide),
		api("POST", "/api/sessions/{id}/resume", true, s.apiResume),
		api("POST", "/api/sessions/{id}/fork", true, s.apiFork),
		api("GET", "/api/sessions/{id}/export", false, s.apiExport),
		imp,
		api("GET", "/api/memory/namespaces", false, s.apiMemoryNamespaces),
		api("GET", "/api/memory/items", false, s.apiMemoryItems),
		api("GET", "/api/memory/item", false, s.apiMemoryGet),
		api("PUT", "/api/memory/item", true, s.apiMemoryPut),
		api("DELETE", "/api/memory/item", true, s.apiMemoryDelete),
		api("DELETE", "/api/memory/namespace", true, s.apiMemoryDeleteNamespace),
		api("GET", "/api/memory/search", false, s.apiMemorySearch),
		api("GET", "/api/fleet", false, s.apiFleet),
		api("GET", "/api/search", false, s.apiSearch),
		api("GET", "/api/workers", false, s.apiWorkers),
		{method: "GET", pattern: "/login", public: true, handle: s.uiLogin},
		{method: "POST", pattern: "/login", public: true, handle: s.uiLoginPost},
		{method: "GET", pattern: "/assets/{file}", public: true, handle: s.uiAsset},
		ui("POST", "/logout", false, s.uiLogout),
		ui("GET", "/{$}", false, s.uiHome),
		ui("GET", "/sessions", false, s.uiSessions),
		uimp,
		ui("GET", "/sessions/{id}", false, s.uiSession),
		ui("GET", "/sessions/{id}/rows", false, s.uiRows),
		ui("GET", "/sessions/{id}/state", false, s.uiState),
		ui("GET", "/sessions/{id}/head", false, s.uiHead),
		ui("GET", "/sessions/{id}/compare", false, s.uiCompare),
		ui("POST", "/sessions/{id}/approve", true, s.uiApprove),
		ui("POST", "/sessions/{id}/resume", true, s.uiResume),
		ui("POST", "/sessions/{id}/fork", true, s.uiFork),
		ui("POST", "/sessions/{id}/delete", true, s.uiDelete),
		ui("GET", "/memory", false, s.uiMemory),
		ui("GET", "/fleet", false, s.uiFleet),
		ui("GET", "/workers", false, s.uiWorkers),
		ui("POST", "/memory/delete", true, s.uiMemoryDelete),
		ui("POST", "/memory/delete-namespace", true, s.uiMemoryDeleteNamespace),
	}
}

// dispatch serves the routes of one pattern: it picks the method, checks
// the token, CSRF and read-only mode, bounds the body and turns the
// handler's error into a response.
func (s *Server) dispatch(rts []route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rt *route
		var allow []string
		for i := range rts {
			allow = append(allow, rts[i].method)
			if rts[i].method == r.Method || rts[i].method == "GET" && r.Method == "HEAD" {
				rt = &rts[i]
			}
		}
		api := strings.HasPrefix(r.URL.Path, "/api/")
		if rt == nil {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.failAs(w, r, api, &apiError{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
				Message: fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", "))})
			return
		}
		limit := rt.maxBody
		if limit == 0 {
			limit = s.cfg.MaxBodyBytes
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if !rt.public {
			ui, err := s.auth.check(r)
			if err != nil {
				if !rt.api && r.Method == "GET" {
					seeOther(w, r, "/login?next="+urlQueryEscape(r.URL.RequestURI()))
					return
				}
				s.failAs(w, r, rt.api, err)
				return
			}
			if ui != nil {
				r = r.WithContext(context.WithValue(r.Context(), uiKey{}, ui))
			}
			if unsafeMethod(r.Method) && ui != nil {
				if err := s.auth.checkCSRF(r, ui); err != nil {
					s.failAs(w, r, rt.api, err)
					return
				}
			}
		}
		if rt.write && s.cfg.ReadOnly {
			s.failAs(w, r, rt.api, &apiError{Status: http.StatusForbidden, Code: "read_only",
				Message: "this server is read-only: it does not change the store", Hint: "start cairn serve without --read-only"})
			return
		}
		if err := rt.handle(w, r); err != nil {
			s.failAs(w, r, rt.api, err)
		}
	})
}

func unsafeMethod(m string) bool {
	return m != "GET" && m != "HEAD" && m != "OPTIONS"
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	api := strings.HasPrefix(r.URL.Path, "/api/")
	if !api {
		if _, err := s.auth.check(r); err != nil {
			seeOther(w, r, "/login")
			return
		}
	}
	s.failAs(w, r, api, &apiError{Status: http.StatusNotFound, Code: "no_route",
		Message: fmt.Sprintf("nothing is served at %s", r.URL.Path), Hint: "the API is described at /api/openapi.json"})
}

// fail answers with err, as JSON under /api and as a page elsewhere.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.failAs(w, r, strings.HasPrefix(r.URL.Path, "/api/"), err)
}

func (s *Server) failAs(w http.ResponseWriter, r *http.Request, api bool, err error) {
	ae := toAPIError(err)
	if ae.Status >= 500 && ae.Status != http.StatusNotImplemented {
		s.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if api || wantsJSON(r) {
		writeError(w, ae)
		return
	}
	s.errorPage(w, r, ae)
}

func wantsJSON(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "application/json") && !strings.Contains(r.Header.Get("Accept"), "text/html")
}
