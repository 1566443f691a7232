// Command ferretdb runs FerretDB, a MongoDB wire-protocol server, on a
// PostgreSQL database or on SQLite files in one folder: the MongoDB server
// cairn's mongodb store is tested against. It prints the server's MongoDB
// URI on one line on stdout once the server accepts connections, logs only
// warnings and errors to stderr, and stops cleanly on SIGINT or SIGTERM.
//
// Usage:
//
//	ferretdb [-listen 127.0.0.1:27017] -postgresql URL
//	ferretdb [-listen 127.0.0.1:27017] -dir DIR
//
// On PostgreSQL, FerretDB hands equality filters on any field to the
// database, as MongoDB serves them from its indexes; on SQLite it hands
// over only a filter on _id alone and reads the whole collection for any
// other, so every query's cost grows with the collection there.
//
// It is a module of its own so that FerretDB's large dependency tree stays
// out of cairn's go.mod.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:27017", "TCP `address` to listen on (port 0 picks a free port)")
	dir := flag.String("dir", "", "`folder` for the SQLite files; created if missing (unless -postgresql)")
	verbose := flag.Bool("v", false, "log at info level instead of warnings only")
	pg := flag.String("postgresql", "", "store the data in this PostgreSQL database `URL` instead of SQLite files")
	flag.Parse()
	if *dir == "" && *pg == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	cfg := &ferretdb.Config{Listener: ferretdb.ListenerConfig{TCP: *listen}, Handler: "postgresql", PostgreSQLURL: *pg}
	if *pg == "" {
		abs, err := filepath.Abs(*dir)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return fmt.Errorf("data folder: %w", err)
		}
		cfg.Handler, cfg.SQLiteURL = "sqlite", "file:"+abs+"/"
	}

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	cfg.Logger = logger
	f, err := ferretdb.New(cfg)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Run(ctx)
	}()

	uri := f.MongoDBURI() // waits for the listener to be bound
	if err := waitAccepting(ctx, uri, done); err != nil {
		stop()
		<-done
		return err
	}
	fmt.Println(uri)

	<-ctx.Done()
	stop()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return errors.New("did not stop within 10s")
	}
	return nil
}

// waitAccepting dials the server's address until it accepts a connection.
func waitAccepting(ctx context.Context, uri string, done <-chan struct{}) error {
	u, err := url.Parse(uri)
	if err != nil {
		return fmt.Errorf("server URI %q: %w", uri, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server not accepting connections on %s: %w", u.Host, err)
		}
		select {
		case <-done:
			return fmt.Errorf("server stopped before accepting connections: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
