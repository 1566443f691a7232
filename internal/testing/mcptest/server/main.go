// Command server runs the MCP test server of package mcptest on its
// standard input and output, or with -http ADDR as a streamable-HTTP server
// (printing its URL on a line of its own); with MCPTEST_TOKEN set, HTTP
// requests must carry "Authorization: Bearer TOKEN". With MCPTEST_PIDS
// set, it appends its process ID to that file as it starts; a start after
// the first one there then waits MCPTEST_RESTART_DELAY (a Go duration)
// before it answers.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn/internal/testing/mcptest"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP at this address instead of standard input and output")
	flag.Parse()
	if path := os.Getenv("MCPTEST_PIDS"); path != "" {
		data, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			log.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = fmt.Fprintln(f, os.Getpid())
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			log.Fatal(err)
		}
		if d, err := time.ParseDuration(os.Getenv("MCPTEST_RESTART_DELAY")); err == nil && len(data) > 0 {
			time.Sleep(d) // a slow start, for the starts after the first
		}
	}
	if *addr == "" {
		err := mcptest.NewServer().Run(context.Background(), &sdk.StdioTransport{})
		if mcptest.Jammed() {
			mcptest.Forever() // stuck in a call: the end of the input goes unnoticed
		}
		if err != nil {
			log.Fatal(err)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	log.Fatal(http.Serve(ln, mcptest.HTTPHandler(os.Getenv("MCPTEST_TOKEN"))))
}
