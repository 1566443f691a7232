package config

import (
	"strings"
	"testing"
)

func TestParse_MCP(t *testing.T) {
	src := `[mcp]
blob_dir = ".cairn/blobs"

[mcp.servers.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/data"]
env = { NODE_OPTIONS = "--max-old-space-size=256", TOKEN = "${FS_TOKEN}" }
cwd = "/tmp"
timeout_seconds = 30

[mcp.servers.fs.tools.write_file]
approval = false

[mcp.servers.fs.tools.move_file]
enabled = false

[mcp.servers.fs.tools.search_files]
timeout_seconds = 600

[mcp.servers.web]
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer ${WEB_TOKEN}" }
idempotent = false

[mcp.servers.off]
command = "never-started"
enabled = false
`
	cfg := Default()
	if err := Parse(cfg, "cairn.toml", []byte(src)); err != nil {
		t.Fatal(err)
	}
	fs := cfg.MCP.Servers["fs"]
	if fs.Command != "npx" || len(fs.Args) != 3 || fs.Env["TOKEN"] != "${FS_TOKEN}" || fs.TimeoutSeconds != 30 {
		t.Errorf("fs = %+v", fs)
	}
	if a := fs.Tools["write_file"].Approval; a == nil || *a {
		t.Errorf("fs write_file approval = %v, want pinned false", a)
	}
	if e := fs.Tools["move_file"].Enabled; e == nil || *e {
		t.Errorf("fs move_file enabled = %v", e)
	}
	if n := fs.Tools["search_files"].TimeoutSeconds; n != 600 {
		t.Errorf("fs search_files timeout_seconds = %d, want 600", n)
	}
	if web := cfg.MCP.Servers["web"]; web.URL == "" || web.Idempotent == nil || *web.Idempotent {
		t.Errorf("web = %+v", web)
	}
	if got := strings.Join(cfg.MCPServerNames(), ","); got != "fs,web" {
		t.Errorf("servers to start: %s, want fs,web", got)
	}
	if cfg.MCP.BlobDir != ".cairn/blobs" {
		t.Errorf("blob_dir = %q", cfg.MCP.BlobDir)
	}
}

func TestParse_MCPErrors(t *testing.T) {
	cases := []struct {
		name, src, key, msg string
		line                int
	}{
		{"unknown key", "[mcp.servers.fs]\ncommand = \"x\"\ncomand = \"y\"\n", "mcp.servers.fs.comand", "unknown key", 3},
		{"unknown tool key", "[mcp.servers.fs]\ncommand = \"x\"\n[mcp.servers.fs.tools.t]\nidempotnt = true\n", "mcp.servers.fs.tools.t.idempotnt", "unknown key", 4},
		{"neither", "[mcp.servers.fs]\ncwd = \"/\"\n", "mcp.servers.fs", "set command", 1},
		{"both", "[mcp.servers.fs]\ncommand = \"x\"\nurl = \"http://h/mcp\"\n", "mcp.servers.fs.url", "both set", 3},
		{"bad url", "[mcp.servers.web]\nurl = \"ftp://h/mcp\"\n", "mcp.servers.web.url", "not an http:// or https:// URL", 2},
		{"headers on a command", "[mcp.servers.fs]\ncommand = \"x\"\nheaders = { A = \"b\" }\n", "mcp.servers.fs.headers", "are for a url", 3},
		{"env on a url", "[mcp.servers.web]\nurl = \"http://h/mcp\"\nenv = { A = \"b\" }\n", "mcp.servers.web.env", "is for a command", 3},
		{"name with _", "[mcp.servers.my_fs]\ncommand = \"x\"\n", "mcp.servers.my_fs", "no '_'", 1},
		{"bad reference", "[mcp.servers.web]\nurl = \"http://h/mcp\"\nheaders = { A = \"${not a var}\" }\n", "mcp.servers.web.headers", "does not name an environment variable", 3},
		{"negative timeout", "[mcp.servers.fs]\ncommand = \"x\"\ntimeout_seconds = -1\n", "mcp.servers.fs.timeout_seconds", "must not be negative", 3},
		{"negative tool timeout", "[mcp.servers.fs]\ncommand = \"x\"\n[mcp.servers.fs.tools.t]\ntimeout_seconds = -5\n", "mcp.servers.fs.tools.t.timeout_seconds", "must not be negative", 4},
		{"wrong type", "[mcp.servers.fs]\ncommand = \"x\"\nargs = \"-y\"\n", "mcp.servers.fs.args", "", 3},
		{"require_approval of an MCP tool", "[agent]\nrequire_approval = [\"fs_write_file\"]\n[mcp.servers.fs]\ncommand = \"x\"\n", "agent.require_approval", "[mcp.servers.fs.tools.write_file]", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ce, _ := parseError(t, c.src)
			if ce.Key != c.key || !strings.Contains(ce.Msg, c.msg) || ce.Line != c.line {
				t.Errorf("got key %q line %d msg %q; want key %q line %d msg containing %q", ce.Key, ce.Line, ce.Msg, c.key, c.line, c.msg)
			}
		})
	}
}

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"TOKEN": "s3cret"}
	got, err := ExpandEnv("Bearer ${TOKEN}", func(k string) string { return env[k] })
	if err != nil || got != "Bearer s3cret" {
		t.Errorf("got %q, %v", got, err)
	}
	_, err = ExpandEnv("${TOKEN} ${MISSING}", func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), "MISSING is not set") {
		t.Errorf("a missing variable: %v", err)
	}
}
