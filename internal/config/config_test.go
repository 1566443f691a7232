package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const full = `# a complete file, as documented
[persistence]
enabled = true
backend = "redis"
connection = "default_redis"
namespace = "agent_sessions"
ttl_seconds = 86400
on_error = "fail"

[connections.default_redis]
url = "redis://127.0.0.1:6379/0"

[agent]
name = "support_bot"
instructions = "You are a helpful assistant."
max_steps = 12

[model]
provider = "openai"
name = "gpt-4o-mini"
base_url = "http://127.0.0.1:11434/v1"
`

func TestParse_Full(t *testing.T) {
	cfg := Default()
	if err := Parse(cfg, "cairn.toml", []byte(full)); err != nil {
		t.Fatal(err)
	}
	if got := cfg.StoreURL(); got != "redis://127.0.0.1:6379/0" {
		t.Errorf("store URL = %q, want the named connection's", got)
	}
	if cfg.Persistence.Namespace != "agent_sessions" || cfg.TTL().Hours() != 24 || cfg.Persistence.OnError != "fail" {
		t.Errorf("persistence = %+v", cfg.Persistence)
	}
	if cfg.Agent.Name != "support_bot" || cfg.Agent.MaxSteps != 12 {
		t.Errorf("agent = %+v", cfg.Agent)
	}
	if cfg.ModelSpec() != "openai:gpt-4o-mini" || cfg.Model.BaseURL == "" {
		t.Errorf("model = %+v", cfg.Model)
	}
}

// parseError parses src as cairn.toml over the defaults, which must fail
// with a *Error: it returns that and the error Parse returned.
func parseError(t *testing.T, src string) (*Error, error) {
	t.Helper()
	err := Parse(Default(), "cairn.toml", []byte(src))
	ce, ok := errors.AsType[*Error](err)
	if !ok {
		t.Fatalf("got %v, want a *config.Error", err)
	}
	return ce, err
}

func TestParse_Errors(t *testing.T) {
	cases := []struct {
		name, src, key, msg string
		line                int
	}{
		{"unknown key", "[persistence]\nenabled = true\nbakend = \"sqlite\"\n", "persistence.bakend", "unknown key", 3},
		{"unknown table", "[agent]\nname = \"x\"\n\n[modle]\nname = \"y\"\n", "modle", "unknown key", 4},
		{"unknown connection key", "[connections.a]\nurl = \"memory:\"\nuser = \"me\"\n", "connections.a.user", "unknown key", 3},
		{"key in another case", "[persistence]\nenabled = true\nURL = \"memory:\"\n", "persistence.URL", `unknown key "URL": keys are case-sensitive; did you mean "url"?`, 3},
		{"table in another case", "[Connections.a]\nurl = \"memory:\"\n", "Connections", `did you mean "connections"?`, 1},
		{"server field in another case", "[mcp.servers.fs]\nCommand = \"x\"\n", "mcp.servers.fs.Command", `did you mean "command"?`, 2},
		{"wrong type", "[agent]\nmax_steps = \"ten\"\n", "agent.max_steps", "incompatible types", 2},
		{"syntax", "[persistence\nenabled = true\n", "", "table name", 2},
		{"bad backend", "[persistence]\nbackend = \"oracle\"\n", "persistence.backend", "unknown backend", 2},
		{"bad on_error", "[persistence]\non_error = \"panic\"\n", "persistence.on_error", "degrade or fail", 2},
		{"missing connection", "[persistence]\nconnection = \"nope\"\n", "persistence.connection", "no [connections.nope]", 2},
		{"bad provider", "[model]\nprovider = \"gemini\"\n", "model.provider", "unknown provider", 2},
		{"unknown tool", "[agent]\nname = \"x\"\nrequire_approval = [\"append_file\", \"rm_rf\"]\n", "agent.require_approval",
			`unknown tool "rm_rf" (the tools are calc, clock, remember, recall, append_file, memory_save, memory_search)`, 3},
		{"negative context budget", "[agent]\nname = \"x\"\ncontext_tokens = -100\n", "agent.context_tokens", `is -100; want 0 (the model's default) or a number of tokens`, 3},
		{"context budget of another type", "[agent]\ncontext_tokens = \"8k\"\n", "agent.context_tokens", "incompatible types", 2},
		{"unknown compaction", "[agent]\n\ncompaction = \"forget\"\n", "agent.compaction", `is "forget"; want summarize, drop or off`, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ce, err := parseError(t, c.src)
			if ce.Key != c.key || ce.Line != c.line || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("got key %q line %d: %v\nwant key %q line %d containing %q", ce.Key, ce.Line, err, c.key, c.line, c.msg)
			}
		})
	}
}

// TestParse_Contradictions: settings of one file that contradict each
// other are refused with the file, the line and both settings named,
// instead of one of them being ignored.
func TestParse_Contradictions(t *testing.T) {
	cases := []struct {
		name, src string
		line      int
		words     []string
	}{
		{"memory backend with a sqlite url", "[persistence]\nbackend = \"memory\"\nurl = \"sqlite:///x.db\"\n", 3,
			[]string{"persistence.url (line 3)", `"sqlite:///x.db" is a sqlite store`, `persistence.backend (line 2) = "memory"`}},
		{"redis backend with a sqlite url, url first", "[persistence]\nurl = \"sqlite:///x.db\"\nbackend = \"redis\"\n", 3,
			[]string{"persistence.url (line 2)", `persistence.backend (line 3) = "redis"`}},
		{"url and connection", "[connections.r]\nurl = \"redis://127.0.0.1:6379/0\"\n[persistence]\nurl = \"sqlite:///x.db\"\nconnection = \"r\"\n", 5,
			[]string{"persistence.url (line 4)", `persistence.connection (line 5) = "r"`, "keep one of them"}},
		{"backend against the connection's url", "[persistence]\nbackend = \"postgres\"\nconnection = \"r\"\n[connections.r]\nurl = \"redis://127.0.0.1:6379/0\"\n", 3,
			[]string{`persistence.connection (line 3) = "r"`, "is a redis store", `persistence.backend (line 2) = "postgres"`}},
		{"connection without a url", "[persistence]\nconnection = \"r\"\n[connections.r]\n", 2, []string{"has no url"}},
		{"password is not shown", "[persistence]\nbackend = \"memory\"\nurl = \"postgres://u:secret@h/db\"\n", 3, []string{"postgres://u:xxxxx@h/db"}},
		{"a model name for the offline model", "[model]\nname = \"gpt-4o\"\n", 2, []string{`model.name (line 2) = "gpt-4o"`, "offline, which takes no name"}},
		{"a server for the script model", "[model]\nprovider = \"script\"\nname = \"s.json\"\nbase_url = \"http://x\"\n", 4,
			[]string{`model.base_url (line 4)`, "script, which has no server"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ce, err := parseError(t, c.src)
			if ce.File != "cairn.toml" || ce.Line != c.line {
				t.Errorf("error at %s:%d, want cairn.toml:%d: %v", ce.File, ce.Line, c.line, err)
			}
			for _, w := range c.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
	// What agrees is accepted, and a URL alone sets the backend.
	for _, src := range []string{
		"[persistence]\nbackend = \"sqlite\"\nurl = \"sqlite:///x.db\"\n",
		"[persistence]\nbackend = \"postgres\"\nurl = \"postgresql://h/db\"\n",
		"[persistence]\nurl = \"redis://h:6379/0\"\n",
		"[model]\nprovider = \"openai\"\nname = \"gpt\"\nbase_url = \"http://127.0.0.1:11434/v1\"\n",
	} {
		cfg := Default()
		if err := Parse(cfg, "cairn.toml", []byte(src)); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
	cfg := Default()
	if err := Parse(cfg, "cairn.toml", []byte("[persistence]\nurl = \"redis://h:6379/0\"\n")); err != nil || cfg.Persistence.Backend != "redis" {
		t.Errorf("a redis url alone: backend %q, %v; want redis", cfg.Persistence.Backend, err)
	}
}

func TestRequireApproval(t *testing.T) {
	cfg := Default()
	if err := Parse(cfg, "cairn.toml", []byte("[agent]\nrequire_approval = [\"append_file\", \"calc\"]\n")); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Agent.RequireApproval, ","); got != "append_file,calc" {
		t.Errorf("require_approval = %q", got)
	}
	env := func(v string) func(string) string {
		return func(k string) string { return map[string]string{"CAIRN_REQUIRE_APPROVAL": v}[k] }
	}
	if err := cfg.ApplyEnv(env("remember, recall")); err != nil || strings.Join(cfg.Agent.RequireApproval, ",") != "remember,recall" {
		t.Errorf("env over file: %v, %v", cfg.Agent.RequireApproval, err)
	}
	if err := cfg.ApplyEnv(env("none")); err != nil || len(cfg.Agent.RequireApproval) != 0 {
		t.Errorf("none: %v, %v", cfg.Agent.RequireApproval, err)
	}
	err := cfg.ApplyEnv(env("append_file,shell"))
	if err == nil || !strings.Contains(err.Error(), "CAIRN_REQUIRE_APPROVAL") || !strings.Contains(err.Error(), `"shell"`) {
		t.Errorf("unknown tool in the environment: %v", err)
	}
}

func TestCompactionSettings(t *testing.T) {
	cfg := Default()
	if err := Parse(cfg, "cairn.toml", []byte("[agent]\ncontext_tokens = 16000\ncompaction = \"drop\"\n")); err != nil {
		t.Fatal(err)
	}
	if cfg.Agent.ContextTokens != 16000 || cfg.Agent.Compaction != "drop" {
		t.Errorf("agent = %+v", cfg.Agent)
	}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	if err := cfg.ApplyEnv(env("CAIRN_CONTEXT_TOKENS", "4096", "CAIRN_COMPACTION", "off")); err != nil || cfg.Agent.ContextTokens != 4096 || cfg.Agent.Compaction != "off" {
		t.Errorf("env over file: %+v, %v", cfg.Agent, err)
	}
	for _, bad := range [][]string{
		{"CAIRN_CONTEXT_TOKENS", "-1"}, {"CAIRN_CONTEXT_TOKENS", "lots"}, {"CAIRN_COMPACTION", "Summarise"},
	} {
		err := cfg.ApplyEnv(env(bad...))
		if err == nil || !strings.Contains(err.Error(), bad[0]) || !strings.Contains(err.Error(), bad[1]) {
			t.Errorf("%s=%s: %v, want an error naming both", bad[0], bad[1], err)
		}
	}
}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte("[persistence]\nurl = \"sqlite:///file.db\"\nnamespace = \"from_file\"\n[model]\nprovider = \"anthropic\"\nname = \"claude\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StoreURL() != "sqlite:///file.db" || cfg.Persistence.Namespace != "from_file" {
		t.Fatalf("file not applied: %+v", cfg.Persistence)
	}
	env := map[string]string{"CAIRN_NAMESPACE": "from_env", "CAIRN_MODEL": "openai:gpt"}
	if err := cfg.ApplyEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if cfg.Persistence.Namespace != "from_env" || cfg.ModelSpec() != "openai:gpt" || cfg.StoreURL() != "sqlite:///file.db" {
		t.Fatalf("env over file: ns %q model %q store %q", cfg.Persistence.Namespace, cfg.ModelSpec(), cfg.StoreURL())
	}
	cfg.Model.BaseURL = "http://127.0.0.1:11434/v1"
	cfg.SetModel("offline") // a flag: another provider's server is dropped
	if cfg.Model.BaseURL != "" || cfg.ModelSpec() != "offline" {
		t.Fatalf("--model offline over openai with a base_url: %+v", cfg.Model)
	}
	cfg.SetStore("memory:") // a flag
	if cfg.StoreURL() != "memory:" || cfg.Persistence.Backend != "memory" {
		t.Fatalf("flag over env: %q", cfg.StoreURL())
	}
	if err := cfg.ApplyEnv(func(k string) string { return map[string]string{"CAIRN_TTL_SECONDS": "soon"}[k] }); err == nil || !strings.Contains(err.Error(), "CAIRN_TTL_SECONDS") {
		t.Fatalf("bad TTL env: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	cfg, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StoreURL() != DefaultURL || cfg.ModelSpec() != "offline" || !cfg.Enabled() {
		t.Fatalf("defaults: store %q model %q enabled %v", cfg.StoreURL(), cfg.ModelSpec(), cfg.Enabled())
	}
	off := false
	cfg.Persistence.Enabled = &off
	if cfg.StoreURL() != "memory:" {
		t.Fatalf("disabled persistence uses %q, want memory:", cfg.StoreURL())
	}
}

// TestLoad_ServeTable: [serve] is read, its bad address refused with its
// line, and the files it and [persistence] name are found from the config
// file's folder.
func TestLoad_ServeTable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cairn.toml")
	os.WriteFile(file, []byte("[persistence]\nencryption_key_file = \"keys/master\"\n\n[serve]\naddr = \"0.0.0.0:8080\"\ntoken_file = \"tokens\"\nread_only = true\n"), 0o600)
	cfg, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	want := Serve{Addr: "0.0.0.0:8080", TokenFile: filepath.Join(dir, "tokens"), ReadOnly: true}
	if cfg.Serve != want {
		t.Errorf("serve = %+v, want %+v", cfg.Serve, want)
	}
	if got := cfg.Persistence.EncryptionKeyFile; got != filepath.Join(dir, "keys/master") {
		t.Errorf("encryption_key_file = %q, want it in the config file's folder", got)
	}
	err = Parse(Default(), "cairn.toml", []byte("[serve]\nread_only = true\naddr = \"7420\"\n"))
	var ce *Error
	if !errors.As(err, &ce) || ce.Key != "serve.addr" || ce.Line != 3 || !strings.Contains(err.Error(), "HOST:PORT") {
		t.Errorf("addr = \"7420\": %v", err)
	}
}
