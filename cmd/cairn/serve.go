package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/server"
)

// DefaultServeAddr is where cairn serve listens without --addr.
const DefaultServeAddr = "127.0.0.1:7420"

func newServeCmd(app *cli.App) *cobra.Command {
	var (
		addr, tokenFile string
		readOnly        bool
		poll            time.Duration
	)
	c := &cobra.Command{
		Use:   "serve [--addr HOST:PORT] [--read-only] [--token-file FILE]",
		Short: "Serve the web inspector and the HTTP API over the store",
		Long: `Serve the store's sessions over HTTP: a web inspector at /sessions and a JSON
API under /api (described at /api/openapi.json), for agents in any language.
The store's long-term memory is served too: the page /memory and the API
under /api/memory.

It listens on 127.0.0.1:7420 unless --addr says otherwise, and prints the
address, a new access token and a one-time link that signs a browser in.
Every request needs the token (Authorization: Bearer TOKEN). With
--token-file the tokens are read from a file instead (one per line, at
least 16 characters, # comments), for a deployment shared by several
people or programs; CAIRN_SERVE_TOKEN_FILE names the same file. A token
that is easy to guess (a character or a part repeated, few different
characters, a run such as abcdef…) is refused.

--read-only refuses every change to the store. The [serve] table of
cairn.toml sets addr, token_file and read_only for a deployment that
starts the same way each time; a flag overrides its key. Resuming a run from the
inspector uses the agent the configuration describes, as cairn sessions
resume does. Stop the server with Ctrl+C: runs it started are interrupted
and can be resumed.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			cfg, err := app.Config()
			if err != nil {
				return err
			}
			if !c.Flags().Changed("addr") && cfg.Serve.Addr != "" {
				addr = cfg.Serve.Addr
			}
			if !c.Flags().Changed("read-only") && cfg.Serve.ReadOnly {
				readOnly = true
			}
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return cli.Usage("give --addr as HOST:PORT, such as 127.0.0.1:7420", "--addr %q: %v", addr, err)
			}
			tokens, err := serveTokens(app, tokenFile, cfg.Serve.TokenFile)
			if err != nil {
				return err
			}
			store, storeURL, err := app.OpenStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			// Long-term memory lives under the same URL; a store that
			// keeps none, or that cannot open it, is served without it.
			mem, _, err := app.OpenMemory(ctx)
			if err != nil {
				app.Warnf("serving without long-term memory (the memory API and page are off): %v", err)
				mem = nil
			} else {
				defer mem.Close()
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return cli.Fail(fmt.Errorf("listen on %s: %w", addr, err), "is another server using that port? choose another with --addr")
			}
			_, realPort, _ := net.SplitHostPort(ln.Addr().String())
			loopback := isLoopback(host)
			var allowed []string
			if loopback {
				allowed = []string{"127.0.0.1:" + realPort, "localhost:" + realPort, "[::1]:" + realPort}
			} else {
				app.Warnf("listening on %s, beyond this machine: requests and the token travel as plain HTTP; put a TLS proxy in front", addr)
			}
			snap := app.SnapshotPolicy()
			srv, err := server.New(server.Config{
				Store:    store,
				Memory:   mem,
				Tokens:   tokens.list,
				ReadOnly: readOnly,
				Agent:    traced(app.NewAgent),
				Claim: func(ctx context.Context, s *agent.Session) (*agent.Claim, error) {
					return claimSession(ctx, app, s, false, "cairn sessions resume "+s.ID()+" --force")
				},
				AllowedHosts:   allowed,
				PollInterval:   poll,
				Logger:         app.ProcessLogger(slog.LevelWarn),
				SnapshotEvents: snap.Events,
				SnapshotBytes:  snap.Bytes,
			})
			if err != nil {
				ln.Close()
				return cli.Fail(err, "check the token file")
			}
			linkHost := host
			if !loopback || host == "" || host == "0.0.0.0" || host == "::" {
				linkHost = "127.0.0.1"
			}
			base := "http://" + net.JoinHostPort(linkHost, realPort)
			login := srv.LoginURL(base)
			if app.Flags.JSON {
				out := map[string]any{"url": base, "login": login, "read_only": readOnly, "memory": mem != nil}
				tokens.addJSON(out)
				if err := cli.WriteJSON(app.Stdout, out); err != nil {
					return err
				}
			} else {
				app.Printf("cairn serve: %s (store %s)\n", base, text.RedactURL(storeURL))
				tokens.print(app)
				app.Printf("open:  %s (a one-time link)\n", login)
				if readOnly {
					app.Printf("read-only: the store is not changed\n")
				}
			}
			var cerr error
			err = serveHTTP(ctx, ln, srv, 10*time.Second, func(sctx context.Context) {
				cerr = srv.Close(sctx) // ends the streams and interrupts the runs
			})
			if err != nil {
				return cli.Fail(fmt.Errorf("serve: %w", err), "check the address")
			}
			if cerr != nil {
				app.Warnf("%v", cerr)
			}
			return nil
		},
	}
	c.Flags().StringVar(&addr, "addr", DefaultServeAddr, "address to listen on, HOST:PORT (beyond loopback only on purpose)")
	c.Flags().BoolVar(&readOnly, "read-only", false, "refuse every change to the store")
	c.Flags().StringVar(&tokenFile, "token-file", "", "read the access tokens from this file, one per line (default: a new token each start)")
	c.Flags().DurationVar(&poll, "poll", server.DefaultPollInterval, "how often event streams look for events written by other processes")
	return c
}

// tokenHint says how to make a token for a token file.
var tokenHint = fmt.Sprintf("put a random token of at least %d characters on that line instead: `head -c 32 /dev/urandom | base64` makes one, "+
	"and so does cairn serve started without a token file (the line token: …)", server.MinTokenLength)

// accessTokens are the tokens an HTTP server of cairn accepts, and where
// they come from.
type accessTokens struct {
	list      []string
	generated bool   // one new token, made at start
	file      string // the token file, when not generated
}

// serveTokens returns the access tokens: those of the token file, each
// checked with server.CheckToken, or a new one. The file is flag, else
// CAIRN_SERVE_TOKEN_FILE, else configured.
func serveTokens(app *cli.App, flag, configured string) (accessTokens, error) {
	path := cmp.Or(flag, app.Getenv("CAIRN_SERVE_TOKEN_FILE"), configured)
	if path == "" {
		return accessTokens{list: []string{server.NewToken()}, generated: true}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return accessTokens{}, cli.Fail(fmt.Errorf("token file: %w", err), "give a file with one access token per line")
	}
	t := accessTokens{file: path}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		tok := strings.TrimSpace(sc.Text())
		if tok == "" || strings.HasPrefix(tok, "#") {
			continue
		}
		if err := server.CheckToken(tok); err != nil {
			return accessTokens{}, cli.Fail(fmt.Errorf("token file %s:%d: the token %w", path, line, err), tokenHint)
		}
		t.list = append(t.list, tok)
	}
	if len(t.list) == 0 {
		return accessTokens{}, cli.Fail(fmt.Errorf("token file %s holds no token", path), "put one access token per line")
	}
	return t, nil
}

// addJSON adds a generated token to out, the --json record of a start.
func (t accessTokens) addJSON(out map[string]any) {
	if t.generated {
		out["token"] = t.list[0]
	}
}

// print prints the line of a start that tells of the tokens.
func (t accessTokens) print(app *cli.App) {
	if t.generated {
		app.Printf("token: %s\n", t.list[0])
	} else {
		app.Printf("tokens: %d from %s\n", len(t.list), t.file)
	}
}

// serveHTTP serves h on ln until serving fails or ctx ends, then shuts
// down, calling stop first when it is not nil, within grace. It returns
// why serving ended unless that was the shutdown.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration, stop func(context.Context)) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if stop != nil {
		stop(sctx)
	}
	_ = hs.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
