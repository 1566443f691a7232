// Command server runs the MCP test server of package mcptest on its
// standard input and output, or with -http ADDR as a streamable-HTTP server
// (printing its URL on a line of its own); with MCPTEST_TOKEN set, HTTP
// requests must carry "Authorization: Bearer TOKEN".
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn/internal/mcptest"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP at this address instead of standard input and output")
	flag.Parse()
	if *addr == "" {
		if err := mcptest.NewServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
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
