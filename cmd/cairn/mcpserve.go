package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/mcp/mcpserver"
)

func newMCPCmd(app *cli.App) *cobra.Command {
	var (
		httpAddr, tokenFile string
		readOnly            bool
	)
	c := &cobra.Command{
		Use:   "mcp [--http HOST:PORT [--token-file FILE]] [--read-only]",
		Short: "Serve long-term memory and sessions to MCP clients",
		Long: `Run cairn as an MCP (Model Context Protocol) server over the store, for any
MCP client (Claude Code, Cursor, an agent in another language). Its tools:

  memory_save     create or replace a memory item      (destructive, idempotent)
  memory_search   search memory by words, best first   (read-only)
  memory_get      one item by namespace and key        (read-only)
  memory_list     items, or namespaces, under a prefix (read-only)
  memory_delete   erase an item or a namespace         (destructive, idempotent)
  sessions_list   saved sessions, latest first         (read-only)
  sessions_show   a session's transcript               (read-only)

It speaks on stdin and stdout unless --http gives an address: then it
serves streamable HTTP at http://HOST:PORT/mcp, with the token rule of
cairn serve: every request needs Authorization: Bearer TOKEN, a new token
printed at start, or the tokens of --token-file (CAIRN_SERVE_TOKEN_FILE,
[serve] token_file), one per line. --read-only leaves out memory_save and
memory_delete. An MCP client's config names it so:

  {"mcpServers": {"cairn": {"command": "cairn", "args": ["mcp"]}}}`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			cfg, err := app.Config()
			if err != nil {
				return err
			}
			var tokens accessTokens
			if httpAddr != "" {
				if _, _, err := net.SplitHostPort(httpAddr); err != nil {
					return cli.Usage("give --http as HOST:PORT, such as 127.0.0.1:7421", "--http %q: %v", httpAddr, err)
				}
				tokens, err = serveTokens(app, tokenFile, cfg.Serve.TokenFile)
				if err != nil {
					return err
				}
			} else if c.Flags().Changed("token-file") {
				return cli.Usage("add --http HOST:PORT, or drop --token-file", "--token-file applies to --http only: stdio needs no token")
			}
			store, _, err := app.OpenStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			mem, _, err := app.OpenMemory(ctx)
			if err != nil {
				return err
			}
			defer mem.Close()
			srv := mcpserver.New(mcpserver.Config{
				Memory: mem, Sessions: store, ReadOnly: readOnly, Version: version(),
				Transcript: func(events []cairn.Event) ([]mcpserver.TranscriptLine, error) {
					lines, err := cli.TranscriptLines(events)
					out := make([]mcpserver.TranscriptLine, len(lines))
					for i, l := range lines {
						out[i] = mcpserver.TranscriptLine(l)
					}
					return out, err
				},
			})
			if httpAddr == "" {
				err := srv.Run(ctx, &sdk.StdioTransport{})
				if err != nil && !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "EOF") {
					return cli.Fail(fmt.Errorf("mcp: %w", err), "the client closed the connection or sent what is not MCP")
				}
				return nil
			}
			return serveMCPHTTP(ctx, app, srv, httpAddr, tokens)
		},
	}
	c.Flags().StringVar(&httpAddr, "http", "", "serve streamable HTTP at this address, HOST:PORT, instead of stdio")
	c.Flags().StringVar(&tokenFile, "token-file", "", "with --http: read the access tokens from this file, one per line (default: a new token each start)")
	c.Flags().BoolVar(&readOnly, "read-only", false, "leave out the tools that change the store")
	return c
}

// serveMCPHTTP serves srv over streamable HTTP at /mcp until ctx ends,
// each request checked for one of tokens.
func serveMCPHTTP(ctx context.Context, app *cli.App, srv *sdk.Server, addr string, tokens accessTokens) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return cli.Fail(fmt.Errorf("listen on %s: %w", addr, err), "is another server using that port? choose another with --http")
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	if !isLoopback(host) {
		app.Warnf("listening on %s, beyond this machine: requests and the token travel as plain HTTP; put a TLS proxy in front", addr)
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Logger: app.ProcessLogger(slog.LevelWarn)})
	mux := http.NewServeMux()
	mux.Handle("/mcp", bearer(tokens.list, h))
	linkHost := host
	if host == "" || host == "0.0.0.0" || host == "::" {
		linkHost = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(linkHost, port) + "/mcp"
	if app.Flags.JSON {
		out := map[string]any{"url": url}
		tokens.addJSON(out)
		if err := cli.WriteJSON(app.Stdout, out); err != nil {
			ln.Close()
			return err
		}
	} else {
		app.Printf("cairn mcp: %s\n", url)
		tokens.print(app)
	}
	if err := serveHTTP(ctx, ln, mux, 5*time.Second, nil); err != nil {
		return cli.Fail(fmt.Errorf("mcp: %w", err), "check the address")
	}
	return nil
}

// bearer lets through the requests whose Authorization header holds one
// of tokens, and answers 401 to the others.
func bearer(tokens []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok {
			for _, t := range tokens {
				if subtle.ConstantTimeCompare([]byte(got), []byte(t)) == 1 {
					next.ServeHTTP(w, r)
					return
				}
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
		http.Error(w, "missing or wrong token: send Authorization: Bearer TOKEN", http.StatusUnauthorized)
	})
}
