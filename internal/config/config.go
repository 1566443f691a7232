// Package config loads cairn's configuration: cairn.toml (found in the
// working directory or the nearest folder above it, then the user's config
// folder), environment variables
// and flags, in that order of increasing precedence. Unknown keys are an
// error that names the key and its line.
package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// FileName is the name of the config file.
const FileName = "cairn.toml"

// Config is the whole configuration.
type Config struct {
	Persistence Persistence           `toml:"persistence"`
	Connections map[string]Connection `toml:"connections"`
	Agent       Agent                 `toml:"agent"`
	Model       Model                 `toml:"model"`
	MCP         MCP                   `toml:"mcp"`
	Serve       Serve                 `toml:"serve"`

	// Source is the file the configuration was read from, "" if none.
	Source string `toml:"-"`
}

// Persistence says where sessions are stored.
type Persistence struct {
	Enabled    *bool  `toml:"enabled"`
	Backend    string `toml:"backend"`
	URL        string `toml:"url"`
	Connection string `toml:"connection"`
	Namespace  string `toml:"namespace"`
	TTLSeconds int64  `toml:"ttl_seconds"`
	OnError    string `toml:"on_error"`
	// EncryptionKeyFile names a file holding the master key that encrypts
	// every event before it reaches the store (see store/crypt); "" means
	// no encryption.
	EncryptionKeyFile string `toml:"encryption_key_file"`
	// SnapshotEvents and SnapshotBytes are when a session's snapshot is
	// written (agent.Agent's fields of those names): 0 for the defaults,
	// -1 for no snapshots.
	SnapshotEvents int `toml:"snapshot_events"`
	SnapshotBytes  int `toml:"snapshot_bytes"`
}

// Connection is a named store address.
type Connection struct {
	URL string `toml:"url"`
}

// Agent configures the agent that runs sessions.
type Agent struct {
	Name         string `toml:"name"`
	Instructions string `toml:"instructions"`
	MaxSteps     int    `toml:"max_steps"`
	// RequireApproval names the tools whose calls wait for a person's
	// decision (cairn sessions resume ID --approve CALL_ID or --deny
	// CALL_ID) before they run. Each must be one of Tools.
	RequireApproval []string `toml:"require_approval"`
	// ContextTokens is the budget of each request to the model, in
	// estimated tokens: before a model call whose request would exceed it,
	// older messages are compacted. 0 means the model's default
	// (agent.DefaultContextTokens).
	ContextTokens int `toml:"context_tokens"`
	// Compaction is how older messages make room: one of Compactions;
	// "" means "summarize".
	Compaction string `toml:"compaction"`
}

// Compactions are the values agent.compaction may take.
var Compactions = []string{"summarize", "drop", "off"}

// Tools are the names of the built-in tools, the ones
// agent.require_approval may name.
var Tools = []string{"calc", "clock", "remember", "recall", "append_file"}

// MemoryTools are the names of the long-term memory tools that --memory-ns
// gives the agent; require_approval may name them too.
var MemoryTools = []string{"memory_save", "memory_search"}

// approvable reports whether require_approval may name the tool, and
// lists the names it may.
func approvable(name string) (bool, string) {
	all := append(slices.Clone(Tools), MemoryTools...)
	return slices.Contains(all, name), strings.Join(all, ", ")
}

// Serve configures cairn serve, for a deployment that starts it the same
// way each time; its flags override each key.
type Serve struct {
	// Addr is the HOST:PORT to listen on ("" means 127.0.0.1:7420).
	Addr string `toml:"addr"`
	// TokenFile names a file of access tokens, one per line, so that the
	// tokens stay the same across restarts ("" means a new token at each
	// start).
	TokenFile string `toml:"token_file"`
	// ReadOnly refuses every change to the store.
	ReadOnly bool `toml:"read_only"`
}

// Model chooses the model.
type Model struct {
	Provider string `toml:"provider"`
	Name     string `toml:"name"`
	BaseURL  string `toml:"base_url"`
}

// Defaults.
const (
	DefaultURL          = "sqlite:///.cairn/cairn.db"
	DefaultNamespace    = "default"
	DefaultAgentName    = "assistant"
	DefaultInstructions = "You are a helpful assistant."
	DefaultMaxSteps     = 20
)

// Default returns the configuration used when nothing is configured: the
// embedded SQLite store at .cairn/cairn.db and the offline model.
func Default() *Config {
	on := true
	return &Config{
		Persistence: Persistence{Enabled: &on, Backend: "sqlite", Namespace: DefaultNamespace, OnError: "degrade"},
		Agent:       Agent{Name: DefaultAgentName, Instructions: DefaultInstructions, MaxSteps: DefaultMaxSteps},
		Model:       Model{Provider: "offline"},
	}
}

// Error is a configuration error with the file and line where it is.
type Error struct {
	File string
	Line int // 0 when not known
	Key  string
	Msg  string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// Load reads the file at path (none if ""), over the defaults.
func Load(path string) (*Config, error) {
	cfg := Default()
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if err := Parse(cfg, path, data); err != nil {
		return nil, err
	}
	cfg.Source = path
	// A file named by the config file is found from the config file's
	// folder, as its store is, wherever cairn runs.
	dir := filepath.Dir(path)
	for _, p := range []*string{&cfg.Persistence.EncryptionKeyFile, &cfg.Serve.TokenFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	return cfg, nil
}

// Parse decodes TOML data over cfg strictly: unknown keys and wrong types
// are errors naming the key and line.
func Parse(cfg *Config, file string, data []byte) error {
	md, err := toml.Decode(string(data), cfg)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return &Error{File: file, Line: pe.Position.Line, Msg: pe.Message}
		}
		e := &Error{File: file, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
		if m := lineRe.FindStringSubmatch(err.Error()); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Key = m[2]
			if _, rest, ok := strings.Cut(e.Msg, "): "); ok {
				e.Msg = rest
			}
		}
		return e
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		return &Error{File: file, Line: keyLine(data, k), Key: k.String(), Msg: "unknown key" + hint(k)}
	}
	for _, k := range md.Keys() {
		if i, want := keyCase(reflect.TypeFor[Config](), k); i >= 0 {
			return &Error{File: file, Line: keyLine(data, k), Key: k[:i+1].String(),
				Msg: fmt.Sprintf("unknown key %q: keys are case-sensitive; did you mean %q?", k[i], want)}
		}
	}
	src := &source{file: file, data: data, md: md}
	if err := cfg.checkContradictions(src); err != nil {
		return err
	}
	cfg.normalize(src)
	if err := cfg.Validate(file); err != nil {
		var ce *Error
		if errors.As(err, &ce) && ce.Line == 0 && ce.Key != "" {
			ce.Line = src.line(ce.Key)
		}
		return err
	}
	return nil
}

// keyCase finds a part of k that names a field of t in another case (the
// TOML decoder matches such keys, but TOML keys are case-sensitive, and
// the checks that read the file's keys would not see them): its index and
// the field's name, or -1.
func keyCase(t reflect.Type, k toml.Key) (int, string) {
	for i, part := range k {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem() // part is a name of the user's
			continue
		case reflect.Struct:
		default:
			return -1, ""
		}
		var field reflect.Type
		want := ""
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if name == part {
				field = f.Type
				break
			}
			if strings.EqualFold(name, part) {
				want = name
			}
		}
		if field == nil {
			if want != "" {
				return i, want
			}
			return -1, ""
		}
		t = field
	}
	return -1, ""
}

var lineRe = regexp.MustCompile(`line (\d+) \(last key "([^"]*)"\)`)

func hint(k toml.Key) string {
	if len(k) == 1 {
		return " (known tables: [persistence], [connections.NAME], [agent], [model], [mcp.servers.NAME], [serve])"
	}
	return ""
}

// keyLine finds the line of a key in TOML source: the line that sets the
// key's last part inside the table that holds it.
func keyLine(data []byte, k toml.Key) int {
	table := strings.Join(k[:len(k)-1], ".")
	name := k[len(k)-1]
	current := ""
	for i, line := range strings.Split(string(data), "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "[") {
			current = strings.Trim(strings.TrimSpace(strings.SplitN(l, "#", 2)[0]), "[] ")
			if current == strings.Join(k, ".") {
				return i + 1
			}
			continue
		}
		if current != table {
			continue
		}
		key, _, ok := strings.Cut(l, "=")
		if ok && strings.Trim(strings.TrimSpace(key), `"'`) == name {
			return i + 1
		}
	}
	return 0
}

// Validate checks values that TOML types cannot.
func (c *Config) Validate(file string) error {
	p := c.Persistence
	switch p.Backend {
	case "", "memory", "file", "sqlite", "postgres", "redis", "mongodb":
	default:
		return &Error{File: file, Key: "persistence.backend", Msg: fmt.Sprintf("unknown backend %q (want memory, file, sqlite, postgres, redis or mongodb)", p.Backend)}
	}
	switch p.OnError {
	case "", "degrade", "fail":
	default:
		return &Error{File: file, Key: "persistence.on_error", Msg: fmt.Sprintf("is %q; want degrade or fail", p.OnError)}
	}
	if p.TTLSeconds < 0 {
		return &Error{File: file, Key: "persistence.ttl_seconds", Msg: "must not be negative"}
	}
	if p.Connection != "" {
		if _, ok := c.Connections[p.Connection]; !ok {
			return &Error{File: file, Key: "persistence.connection", Msg: fmt.Sprintf("names %q, but there is no [connections.%s]", p.Connection, p.Connection)}
		}
	}
	switch c.Model.Provider {
	case "", "offline", "openai", "anthropic", "script":
	default:
		return &Error{File: file, Key: "model.provider", Msg: fmt.Sprintf("unknown provider %q (want offline, openai, anthropic or script)", c.Model.Provider)}
	}
	if a := c.Serve.Addr; a != "" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return &Error{File: file, Key: "serve.addr", Msg: fmt.Sprintf("is %q; want HOST:PORT, such as 127.0.0.1:7420", a)}
		}
	}
	if c.Agent.MaxSteps < 0 {
		return &Error{File: file, Key: "agent.max_steps", Msg: "must not be negative"}
	}
	if c.Agent.ContextTokens < 0 {
		return &Error{File: file, Key: "agent.context_tokens", Msg: fmt.Sprintf("is %d; want 0 (the model's default) or a number of tokens", c.Agent.ContextTokens)}
	}
	if v := c.Agent.Compaction; v != "" && !slices.Contains(Compactions, v) {
		return &Error{File: file, Key: "agent.compaction", Msg: fmt.Sprintf("is %q; want summarize, drop or off", v)}
	}
	if err := c.validateMCP(file); err != nil {
		return err
	}
	for _, name := range c.Agent.RequireApproval {
		if ok, all := approvable(name); !ok {
			return &Error{File: file, Key: "agent.require_approval",
				Msg: fmt.Sprintf("unknown tool %q (the tools are %s)", name, all)}
		}
	}
	return nil
}

// ApplyEnv applies the environment variables over the configuration:
// CAIRN_STORE (a store URL), CAIRN_NAMESPACE, CAIRN_MODEL (PROVIDER:NAME),
// CAIRN_TTL_SECONDS, CAIRN_ON_ERROR, CAIRN_PERSISTENCE (true/false),
// CAIRN_ENCRYPTION_KEY_FILE, CAIRN_REQUIRE_APPROVAL (tool names separated by
// commas, or "none"), CAIRN_CONTEXT_TOKENS, CAIRN_COMPACTION.
func (c *Config) ApplyEnv(getenv func(string) string) error {
	if v := getenv("CAIRN_STORE"); v != "" {
		c.SetStore(v)
	}
	if v := getenv("CAIRN_NAMESPACE"); v != "" {
		c.Persistence.Namespace = v
	}
	if v := getenv("CAIRN_MODEL"); v != "" {
		c.SetModel(v)
	}
	if v := getenv("CAIRN_TTL_SECONDS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return &Error{File: "environment", Key: "CAIRN_TTL_SECONDS", Msg: fmt.Sprintf("is %q; want a whole number of seconds", v)}
		}
		c.Persistence.TTLSeconds = n
	}
	if v := getenv("CAIRN_ON_ERROR"); v != "" {
		c.Persistence.OnError = v
	}
	if v := getenv("CAIRN_ENCRYPTION_KEY_FILE"); v != "" {
		c.Persistence.EncryptionKeyFile = v
	}
	if v := getenv("CAIRN_REQUIRE_APPROVAL"); v != "" {
		c.Agent.RequireApproval = []string{}
		if strings.TrimSpace(v) != "none" {
			for _, name := range strings.Split(v, ",") {
				name = strings.TrimSpace(name)
				if ok, all := approvable(name); !ok {
					return &Error{File: "environment", Key: "CAIRN_REQUIRE_APPROVAL",
						Msg: fmt.Sprintf("names %q, which is not a tool (the tools are %s; or \"none\")", name, all)}
				}
				c.Agent.RequireApproval = append(c.Agent.RequireApproval, name)
			}
		}
	}
	if v := getenv("CAIRN_CONTEXT_TOKENS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return &Error{File: "environment", Key: "CAIRN_CONTEXT_TOKENS", Msg: fmt.Sprintf("is %q; want a whole number of tokens (0: the model's default)", v)}
		}
		c.Agent.ContextTokens = n
	}
	if v := getenv("CAIRN_COMPACTION"); v != "" {
		if !slices.Contains(Compactions, v) {
			return &Error{File: "environment", Key: "CAIRN_COMPACTION", Msg: fmt.Sprintf("is %q; want summarize, drop or off", v)}
		}
		c.Agent.Compaction = v
	}
	if v := getenv("CAIRN_PERSISTENCE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return &Error{File: "environment", Key: "CAIRN_PERSISTENCE", Msg: fmt.Sprintf("is %q; want true or false", v)}
		}
		c.Persistence.Enabled = &b
	}
	return c.Validate("environment")
}

// SetStore points persistence at a store URL, replacing any connection.
func (c *Config) SetStore(url string) {
	c.Persistence.URL, c.Persistence.Connection = url, ""
	if scheme, _, ok := strings.Cut(url, ":"); ok {
		switch b := SchemeBackend(scheme); b {
		case "memory", "file", "sqlite", "postgres", "redis", "mongodb":
			c.Persistence.Backend = b
		default:
			c.Persistence.Backend = "" // opening the URL names the unknown scheme
		}
	}
}

// SetModel sets the model from "PROVIDER:NAME", "offline" or
// "script:FILE". The base URL is kept for the same provider and dropped
// for another, whose server it is not.
func (c *Config) SetModel(spec string) {
	p, n, _ := strings.Cut(spec, ":")
	if p != c.Model.Provider {
		c.Model.BaseURL = ""
	}
	c.Model.Provider, c.Model.Name = p, n
}

// SchemeBackend names the backend of a store URL's scheme: postgresql is
// postgres, rediss redis and mongodb+srv mongodb; any other scheme is the
// name of its own.
func SchemeBackend(scheme string) string {
	switch scheme {
	case "postgresql":
		return "postgres"
	case "rediss":
		return "redis"
	case "mongodb+srv":
		return "mongodb"
	}
	return scheme
}

// Enabled reports whether sessions are persisted.
func (c *Config) Enabled() bool { return c.Persistence.Enabled == nil || *c.Persistence.Enabled }

// StoreURL returns the URL of the configured store: the url, else the named
// connection's, else the backend's default location.
func (c *Config) StoreURL() string {
	p := c.Persistence
	if !c.Enabled() {
		return "memory:"
	}
	if p.URL != "" {
		return p.URL
	}
	if p.Connection != "" {
		return c.Connections[p.Connection].URL
	}
	switch p.Backend {
	case "memory":
		return "memory:"
	case "file":
		return "file:///.cairn/sessions"
	case "postgres":
		return "postgres://127.0.0.1:5432/cairn"
	case "redis":
		return "redis://127.0.0.1:6379/0"
	case "mongodb":
		return "mongodb://127.0.0.1:27017/cairn"
	}
	return DefaultURL
}

// TTL returns the configured session TTL.
func (c *Config) TTL() time.Duration { return time.Duration(c.Persistence.TTLSeconds) * time.Second }

// ModelSpec returns the model as "PROVIDER:NAME" (or "offline").
func (c *Config) ModelSpec() string {
	if c.Model.Provider == "" || c.Model.Provider == "offline" {
		return "offline"
	}
	return c.Model.Provider + ":" + c.Model.Name
}
