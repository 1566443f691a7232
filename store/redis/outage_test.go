package redis_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/fault"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/storetest"
)

// openURL opens a store on rawURL in a namespace of the test's own.
func openURL(t *testing.T, rawURL string) *redis.Store {
	t.Helper()
	ns := "t_" + testenv.RandHex(6)
	cleanNamespace(t, ns)
	s, err := redis.Open(t.Context(), rawURL, cairn.StoreOptions{Namespace: ns})
	return storetest.Opened(t, s, err)
}

func TestOpen_NothingListens(t *testing.T) {
	_, err := redis.Open(t.Context(), "redis://"+testenv.FreeAddr(t)+"/0", cairn.StoreOptions{})
	fault.WantOutage(t, "Open of a port where nothing listens", err)
}

// TestStore_OutageCut resets every connection to the server and refuses
// new ones: each call fails as an outage, and once the network is back the
// same append goes through once.
func TestStore_OutageCut(t *testing.T) {
	p := fault.StartProxy(t, testURL(t))
	fault.CheckCut(t, openURL(t, p.URL(testURL(t))), p, 10*time.Second)
}

// TestStore_OutageStall holds every byte between the store and the
// server, with go-redis's own read and write timeouts at a minute: each
// call still returns with its context, as an outage.
func TestStore_OutageStall(t *testing.T) {
	p := fault.StartProxy(t, testURL(t))
	fault.CheckStall(t, openURL(t, fault.WithQuery(fault.WithQuery(p.URL(testURL(t)), "read_timeout", "60s"), "write_timeout", "60s")), p)
}

// killClients kills the server's connections of clients named name, as
// CLIENT KILL by an administrator does, and returns how many.
func killClients(t *testing.T, name string) int {
	t.Helper()
	list, err := adminClient(t).ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(" "+line+" ", " name="+name+" ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				if err := adminClient(t).Do(t.Context(), "CLIENT", "KILL", "ID", id).Err(); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
	}
	return n
}

// TestStore_OutageClientKill kills the store's connections on the server.
// Between calls, the next call goes on with a new connection (go-redis
// notices the dead one). During a call, that call fails as an outage: its
// reply is lost, and the store finds no sign that it took effect (it did
// not), nor that it did not.
func TestStore_OutageClientKill(t *testing.T) {
	name := "cairn_t_" + testenv.RandHex(6)
	s := openURL(t, fault.WithQuery(testURL(t), "client_name", name))
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "kill"}); err != nil {
		t.Fatal(err)
	}
	if n := killClients(t, name); n == 0 {
		t.Fatal("the store has no connection on the server")
	}
	if err := s.Append(t.Context(), "kill", 0, storetest.Custom(1, "a")); err != nil {
		t.Fatalf("Append after CLIENT KILL between calls: %v, want nil (a new connection)", err)
	}

	// During a call: the request waits in a stalled proxy while the
	// server kills the connection it would arrive on.
	name = "cairn_t_" + testenv.RandHex(6)
	p := fault.StartProxy(t, testURL(t))
	s = openURL(t, fault.WithQuery(fault.WithQuery(p.URL(testURL(t)), "client_name", name), "max_retries", "-1"))
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "kill"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(t.Context(), "kill", 0, storetest.Custom(1, "a")); err != nil {
		t.Fatal(err)
	}
	p.Stall(0)
	done := make(chan error, 1)
	go func() {
		done <- testenv.Bounded(t, 30*time.Second, "Append", func(ctx context.Context) error {
			return s.Append(ctx, "kill", 1, storetest.Custom(2, "b"))
		})
	}()
	// Kill only once the append's request waits in the proxy: a kill
	// before it would leave go-redis a dead idle connection, which it
	// replaces with a new one before it sends anything.
	fault.Until(t, 10*time.Second, "the append's request in the proxy", func() (bool, error) {
		req, _ := p.HeldBytes()
		return req > 0, nil
	})
	for killClients(t, name) == 0 {
		time.Sleep(10 * time.Millisecond) // until the store's connection is there to kill
	}
	p.Release()
	fault.WantOutage(t, "Append whose connection the server killed", <-done)
	rec, err := s.Load(t.Context(), "kill", 0)
	if err != nil {
		t.Fatalf("Load after the kill: %v", err)
	}
	if len(rec.Events) != 1 {
		t.Errorf("the session holds %d events, want the 1 appended before the kill", len(rec.Events))
	}
}

// TestStore_NotOutages provokes answers of real servers that are not
// outages: a key of the wrong type, and a server out of memory
// (maxmemory reached, OOM command not allowed).
func TestStore_NotOutages(t *testing.T) {
	t.Run("wrong type", func(t *testing.T) {
		s := openStore(t, cairn.StoreOptions{})
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: "x"}); err != nil {
			t.Fatal(err)
		}
		if err := adminClient(t).Set(t.Context(), redis.EventsKey(s, "x"), "not a list", 0).Err(); err != nil {
			t.Fatal(err)
		}
		appendErr, loadErr := fault.AppendLoad(t, s, "x", 0, time.Minute)
		fault.WantAnswer(t, "Append to a session whose events key is a string", appendErr)
		fault.WantAnswer(t, "Load of a session whose events key is a string", loadErr)
	})
	t.Run("out of memory", func(t *testing.T) {
		addr := privateServer(t)
		s := openURL(t, "redis://"+addr+"/0")
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: "x"}); err != nil {
			t.Fatal(err)
		}
		c := goredis.NewClient(&goredis.Options{Addr: addr})
		defer c.Close()
		if err := c.ConfigSet(t.Context(), "maxmemory", "1").Err(); err != nil {
			t.Fatal(err)
		}
		err := s.Append(t.Context(), "x", 0, storetest.Custom(1, "a"))
		fault.WantAnswer(t, "Append to a server past its maxmemory", err)
		if err == nil || !strings.Contains(err.Error(), "OOM") {
			t.Errorf("Append to a server past its maxmemory: %v, want the server's OOM answer", err)
		}
	})
}

// privateServer starts a redis-server of the test's own (it changes the
// server's configuration) on a free port and returns its address.
func privateServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not on PATH: CI runs it (see .ci/run)")
		}
		t.Skip("redis-server is not on PATH")
	}
	addr := testenv.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--maxmemory-policy", "noeviction")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	for i := 0; c.Ping(t.Context()).Err() != nil; i++ {
		if i == 500 {
			t.Fatalf("redis-server on %s did not answer", addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return addr
}

// TestStore_ServerCannotServe runs the store against a server that
// answers every command but the connection's set-up with one error reply
// (or closes the connection): the replies of a Redis that is loading its
// dataset, has lost its master, is resharding or is out of client slots
// are outages; OOM, NOPERM and a script error are not.
func TestStore_ServerCannotServe(t *testing.T) {
	for _, c := range []struct {
		reply  string // "" closes the connection after reading the command
		outage bool
	}{
		{"-LOADING Redis is loading the dataset in memory", true},
		{"-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", true},
		{"-TRYAGAIN Multiple keys request during rehashing of slot", true},
		{"-CLUSTERDOWN The cluster is down", true},
		{"-ERR max number of clients reached", true},
		{"", true},
		{"-OOM command not allowed when used memory > 'maxmemory'.", false},
		{"-NOPERM User has no permissions to run the 'evalsha' command", false},
		{"-ERR Error running script (call to f_1): @user_script:3: WRONGTYPE Operation against a key holding the wrong kind of value", false},
	} {
		name := c.reply
		if name == "" {
			name = "connection closed"
		}
		t.Run(name, func(t *testing.T) {
			addr := answeringServer(t, c.reply)
			s, err := redis.Open(t.Context(), "redis://"+addr+"/0?max_retries=1", cairn.StoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			appendErr, loadErr := fault.AppendLoad(t, s, "x", 0, 30*time.Second)
			for what, err := range map[string]error{"Append": appendErr, "Load": loadErr} {
				if c.outage {
					fault.WantOutage(t, what, err)
				} else {
					fault.WantAnswer(t, what, err)
				}
			}
		})
	}
}

// answeringServer serves the Redis protocol on a free port: it accepts
// the connection's set-up (PING, CLIENT, SELECT; HELLO is refused, so the
// client speaks RESP2) and answers every other command with reply, or
// closes the connection when reply is "".
func answeringServer(t *testing.T, reply string) string {
	t.Helper()
	return testenv.Serve(t, func(conn net.Conn) { serveAnswers(conn, reply) })
}

func serveAnswers(conn net.Conn, reply string) {
	r := bufio.NewReader(conn)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		var out string
		switch strings.ToUpper(args[0]) {
		case "HELLO":
			out = "-ERR unknown command 'HELLO'"
		case "PING":
			out = "+PONG"
		case "CLIENT", "SELECT":
			out = "+OK"
		default:
			if reply == "" {
				return
			}
			out = reply
		}
		if _, err := conn.Write([]byte(out + "\r\n")); err != nil {
			return
		}
	}
}

// readCommand reads one command, an array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("not a command: %q", line)
	}
	args := make([]string, n)
	for i := range args {
		head, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
		if err != nil {
			return nil, fmt.Errorf("not a bulk string: %q", head)
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}

// proxiedPair opens a store of a new namespace through a proxy to the
// test server, and another store of the same namespace straight to it.
func proxiedPair(t *testing.T) (proxied *redis.Store, p *fault.Proxy, direct *redis.Store) {
	t.Helper()
	ns := "t_" + testenv.RandHex(6)
	cleanNamespace(t, ns)
	p = fault.StartProxy(t, testURL(t))
	proxied, err := redis.Open(t.Context(), p.URL(testURL(t)), cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxied.Close() })
	return proxied, p, openStore(t, cairn.StoreOptions{Namespace: ns})
}

// TestStore_LostReplyAmbiguous: an append (and a delete, and a create)
// lands, its reply is lost in a cut, and before the store sends it again
// another client deletes (or creates) the session. The next try's answer
// (not found, exists) would say the call did nothing although it did: the
// store reports an outage instead, whose outcome is unknown.
func TestStore_LostReplyAmbiguous(t *testing.T) {
	s, p, other := proxiedPair(t)
	ctx := t.Context()
	// lost runs call on s with its reply lost, and then, before the
	// store sends it again, between on the other client.
	lost := func(call func(context.Context) error, between func() error) error {
		t.Helper()
		p.StallReplies()
		done := make(chan error, 1)
		go func() {
			done <- testenv.Bounded(t, 20*time.Second, "call", call)
		}()
		fault.Until(t, 10*time.Second, "the server's reply", func() (bool, error) { return p.Held() > 0, nil })
		if err := between(); err != nil {
			t.Fatal(err)
		}
		p.Cut()
		p.Heal()
		return <-done
	}
	for _, c := range []struct {
		name   string
		call   func(context.Context) error
		setup  func() error
		rival  func() error
		wrong  error
		reason string
	}{
		{"append, then deleted", func(ctx context.Context) error { return s.Append(ctx, "a", 0, storetest.Custom(1, "a")) },
			func() error { return other.Create(ctx, cairn.SessionMeta{ID: "a"}) },
			func() error { return other.Delete(ctx, "a") }, cairn.ErrNotFound, "the append was applied before the delete"},
		{"append, then deleted and created again", func(ctx context.Context) error { return s.Append(ctx, "b", 0, storetest.Custom(1, "b")) },
			func() error { return other.Create(ctx, cairn.SessionMeta{ID: "b"}) },
			func() error {
				if err := other.Delete(ctx, "b"); err != nil {
					return err
				}
				if err := other.Create(ctx, cairn.SessionMeta{ID: "b"}); err != nil {
					return err
				}
				return other.Append(ctx, "b", 0, storetest.Custom(1, "other"))
			}, cairn.ErrConflict, "the append was applied before the delete"},
		{"create, then deleted and created again", func(ctx context.Context) error { return s.Create(ctx, cairn.SessionMeta{ID: "c"}) },
			func() error { return nil },
			func() error {
				if err := other.Delete(ctx, "c"); err != nil {
					return err
				}
				return other.Create(ctx, cairn.SessionMeta{ID: "c"})
			}, cairn.ErrExists, "the create was applied before the delete"},
		{"delete, then created again", func(ctx context.Context) error { return s.Delete(ctx, "d") },
			func() error { return other.Create(ctx, cairn.SessionMeta{ID: "d"}) },
			func() error { return other.Create(ctx, cairn.SessionMeta{ID: "d"}) }, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.setup(); err != nil {
				t.Fatal(err)
			}
			err := lost(c.call, c.rival)
			t.Logf("%s: %v", c.name, err)
			if c.wrong != nil && errors.Is(err, c.wrong) {
				t.Errorf("got %v: %s, so that answer is false; want nil or an outage", err, c.reason)
			}
			if err != nil && !cairn.IsUnavailable(err) {
				t.Errorf("got %v, want nil or an outage (cairn.IsUnavailable)", err)
			}
		})
	}
	// The delete took effect once: the session created after it is there.
	if _, err := other.Load(ctx, "d", 0); err != nil {
		t.Errorf("the session created after the delete whose reply was lost: %v (the delete was applied twice)", err)
	}
}
