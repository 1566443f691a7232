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

func TestParse_Errors(t *testing.T) {
	cases := []struct {
		name, src, key, msg string
		line                int
	}{
		{"unknown key", "[persistence]\nenabled = true\nbakend = \"sqlite\"\n", "persistence.bakend", "unknown key", 3},
		{"unknown table", "[agent]\nname = \"x\"\n\n[modle]\nname = \"y\"\n", "modle", "unknown key", 4},
		{"unknown connection key", "[connections.a]\nurl = \"memory:\"\nuser = \"me\"\n", "connections.a.user", "unknown key", 3},
		{"wrong type", "[agent]\nmax_steps = \"ten\"\n", "agent.max_steps", "incompatible types", 2},
		{"syntax", "[persistence\nenabled = true\n", "", "table name", 2},
		{"bad backend", "[persistence]\nbackend = \"oracle\"\n", "persistence.backend", "unknown backend", 0},
		{"bad on_error", "[persistence]\non_error = \"panic\"\n", "persistence.on_error", "degrade or fail", 0},
		{"missing connection", "[persistence]\nconnection = \"nope\"\n", "persistence.connection", "no [connections.nope]", 0},
		{"bad provider", "[model]\nprovider = \"gemini\"\n", "model.provider", "unknown provider", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Parse(Default(), "cairn.toml", []byte(c.src))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *config.Error", err)
			}
			if ce.Key != c.key || ce.Line != c.line || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("got key %q line %d: %v\nwant key %q line %d containing %q", ce.Key, ce.Line, err, c.key, c.line, c.msg)
			}
		})
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
