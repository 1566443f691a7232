package reliability

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// proxy is a TCP proxy between cairn and a real server that a test can
// cut (every proxied connection is reset and new ones are reset as soon as
// they are accepted) and restore (connections go through again).
type proxy struct {
	t      *testing.T
	ln     net.Listener
	target string

	mu      sync.Mutex
	down    bool
	conns   map[net.Conn]struct{} // both sides of every proxied connection
	cuts    int
	refused int // connections reset on arrival while cut
	wg      sync.WaitGroup
}

// newProxy starts a proxy to target (host:port) on a free loopback port;
// it stops when the test ends.
func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// addr returns the address cairn connects to.
func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		down := p.down
		if down {
			p.refused++
		}
		p.mu.Unlock()
		if down {
			reset(c)
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve dials the server for client c and copies both ways until either
// side closes or the proxy is cut.
func (p *proxy) serve(c net.Conn) {
	defer p.wg.Done()
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		reset(c)
		return
	}
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		reset(c)
		reset(s)
		return
	}
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var once sync.Once
	done := func() {
		once.Do(func() {
			p.mu.Lock()
			delete(p.conns, c)
			delete(p.conns, s)
			p.mu.Unlock()
			c.Close()
			s.Close()
		})
	}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(s, c); done() })
	wg.Go(func() { _, _ = io.Copy(c, s); done() })
	wg.Wait()
}

// cut resets every proxied connection and refuses new ones until restore.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	p.cuts++
	for c := range p.conns {
		reset(c)
		delete(p.conns, c)
	}
}

// restore lets connections through again.
func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// refusals returns how many connections were reset on arrival while cut.
func (p *proxy) refusals() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

func (p *proxy) close() {
	p.ln.Close()
	p.cut()
	p.wg.Wait()
}

// reset closes c with a TCP reset, as a server that went away does.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// throughProxy returns rawURL with its host replaced by the proxy's.
func throughProxy(t *testing.T, rawURL string, p *proxy) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.addr()
	return u.String()
}

// serverAddr returns the host:port of a server URL.
func serverAddr(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	host := u.Host
	if u.Port() == "" {
		switch u.Scheme {
		case "postgres", "postgresql":
			host += ":5432"
		case "redis":
			host += ":6379"
		case "mongodb":
			host += ":27017"
		}
	}
	return host
}
