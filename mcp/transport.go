package mcp

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Command returns a Config.Transport that runs a server as a command
// speaking MCP on its standard input and output: name with args, in dir
// ("" for the working directory), with the process's environment plus env
// (KEY=VALUE entries). The end of the command's error output is kept for
// the error of a start that failed.
//
// The command runs in a process group of its own, so that ending it ends
// what it started too (npx starts node, say): Server.Close closes its
// input, then terminates the group, then kills it. When the command's
// first process exits, what is left of its group is killed. On Linux the
// command also ends when the process that started it dies, SIGKILL
// included: it runs under a small sh that the kernel signals then (the
// parent-death signal) and that kills the group.
func Command(name string, args []string, env []string, dir string) func() (sdk.Transport, error) {
	return func() (sdk.Transport, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if len(env) > 0 {
			cmd.Env = append(os.Environ(), env...)
		}
		return &commandTransport{cmd: cmd, tail: &tailBuffer{max: 2048}}, nil
	}
}

// commandTransport runs a command and speaks MCP with it over its
// standard input and output, as the SDK's CommandTransport does, with the
// process handling of process.go.
type commandTransport struct {
	cmd  *exec.Cmd
	tail *tailBuffer

	mu sync.Mutex
	p  *process
}

func (t *commandTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	p, err := startProcess(t.cmd, t.tail)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.p = p
	t.mu.Unlock()
	return (&sdk.IOTransport{Reader: io.NopCloser(p.stdout), Writer: p}).Connect(ctx)
}

// stop terminates the command's process group at once: the session's
// Close then finds it ending instead of waiting for it to notice its
// input's end.
func (t *commandTransport) stop() {
	t.mu.Lock()
	p := t.p
	t.mu.Unlock()
	if p != nil {
		p.terminate()
	}
}

func (t *commandTransport) stderrTail() string { return t.tail.String() }

// HTTP returns a Config.Transport that reaches a streamable-HTTP server at
// url, sending headers with every request (an Authorization header, say).
func HTTP(url string, headers map[string]string) func() (sdk.Transport, error) {
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	return func() (sdk.Transport, error) {
		client := &http.Client{Transport: &headerTransport{base: http.DefaultTransport, headers: h}}
		return &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: client}, nil
	}
}

type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(string(b.buf))
}
