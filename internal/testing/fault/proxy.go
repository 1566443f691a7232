package fault

import (
	"fmt"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy between clients and one server that can cut, stall
// and delay the connections it carries. Its methods are safe for
// concurrent use.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	cut     bool
	stall   chan struct{} // non-nil while stalled; closed when released
	replies chan struct{} // the same for the server's replies alone
	stallN  int           // numbers the stalls, so a timer releases only its own
	delay   time.Duration
	held    int    // chunks waiting for a stall to end
	heldB   [2]int // bytes waiting for a stall to end: requests, replies
	trap    int    // > 0: a request chunk this large or larger begins a stall
	links   map[*link]struct{}
	stats   Stats
	closed  bool
	serving sync.WaitGroup
}

// Stats counts what a proxy did.
type Stats struct {
	Conns   int // connections accepted and forwarded
	Cuts    int // calls of Cut
	Reset   int // connections reset by a cut, open or arriving
	Stalls  int // calls of Stall
	Delays  int // calls of Delay with a latency above 0
	Dropped int // chunks of bytes held by a stall and dropped by a cut
}

// NewProxy starts a proxy to target (host:port) on a free loopback port.
// Close stops it.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy to %s: %w", target, err)
	}
	p := &Proxy{ln: ln, target: target, links: map[*link]struct{}{}}
	p.serving.Add(1)
	go p.accept()
	return p, nil
}

// StartProxy starts a proxy to the server that rawURL names (a
// postgres://, redis:// or mongodb:// URL) and closes it when the test
// ends.
func StartProxy(t testing.TB, rawURL string) *Proxy {
	t.Helper()
	addr, err := ServerAddr(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProxy(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// Addr returns the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL returns rawURL with its host replaced by the proxy's address.
func (p *Proxy) URL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Host = p.Addr()
	return u.String()
}

// Cut resets every connection the proxy carries and resets new ones as
// soon as they arrive, until Heal. Bytes held by a stall are dropped.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.stats.Cuts++
	for l := range p.links {
		p.stats.Reset++
		l.kill()
		delete(p.links, l)
	}
}

// Stall holds every byte in both directions until Release or Heal, or
// until d has passed when d > 0. Connections stay open and new ones are
// accepted; their bytes are held as well. A stall while stalled restarts
// the timer.
func (p *Proxy) Stall(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stall == nil {
		p.stall = make(chan struct{})
	}
	p.stats.Stalls++
	p.stallN++
	if d > 0 {
		n := p.stallN
		time.AfterFunc(d, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.stallN == n {
				p.release()
			}
		})
	}
}

// StallReplies holds the bytes the server sends, and only those, until
// Release or Heal: requests reach the server and are applied, and their
// replies wait. A Cut then drops them: the client never learns that its
// request was applied.
func (p *Proxy) StallReplies() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.replies == nil {
		p.replies = make(chan struct{})
	}
	p.stats.Stalls++
}

// StallAt arms a stall that begins with the first request of at least
// size bytes, before it reaches the server: that chunk and every byte
// after it, both ways, are held until Release (or ReleaseRequests). Smaller
// requests go through meanwhile, so a client can connect and talk until
// it sends the write a test aims at.
func (p *Proxy) StallAt(size int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trap = size
}

// ReleaseRequests turns a stall of both directions into a stall of the
// replies: the held requests go on to the server, and its answers wait.
func (p *Proxy) ReleaseRequests() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.replies == nil {
		p.replies = make(chan struct{})
	}
	if p.stall != nil {
		close(p.stall)
		p.stall = nil
	}
}

// Release ends a stall (of both directions, or of the replies): the held
// bytes go on, in order.
func (p *Proxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.release()
}

func (p *Proxy) release() {
	if p.stall != nil {
		close(p.stall)
		p.stall = nil
	}
	if p.replies != nil {
		close(p.replies)
		p.replies = nil
	}
}

// Delay adds d of latency to every chunk of bytes forwarded from now on, in
// both directions (0: none).
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d > 0 {
		p.stats.Delays++
	}
	p.delay = d
}

// EndCut ends a cut and leaves a stall or a delay as it is: with
// StallReplies before it, the first requests after an outage are applied
// and their replies held.
func (p *Proxy) EndCut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Open returns how many connections the proxy carries now. After a
// Release it falls to 0 once the held bytes were delivered and the
// clients that had gone closed their connections.
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Heal ends a cut, a stall and a delay: connections go through again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	p.delay = 0
	p.trap = 0
	p.release()
}

// Held returns how many chunks of bytes wait for a stall to end: with
// StallReplies, more than 0 once the server has answered a request.
func (p *Proxy) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// HeldBytes returns how many bytes a stall holds now: of requests, and of
// replies.
func (p *Proxy) HeldBytes() (requests, replies int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.heldB[0], p.heldB[1]
}

// Stats returns what the proxy did so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close stops the proxy and resets every connection. It is safe to call
// twice.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.Cut()
	p.Heal()
	p.serving.Wait()
}

func (p *Proxy) accept() {
	defer p.serving.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		if p.cut || p.closed {
			p.stats.Reset++
			p.mu.Unlock()
			reset(c)
			continue
		}
		p.serving.Add(1)
		p.mu.Unlock()
		go p.serve(c)
	}
}

// serve dials the server for client c and forwards both ways until either
// side closes or a cut kills the link.
func (p *Proxy) serve(c net.Conn) {
	defer p.serving.Done()
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		reset(c)
		return
	}
	l := &link{c: c, s: s, dead: make(chan struct{})}
	p.mu.Lock()
	if p.cut || p.closed {
		p.stats.Reset++
		p.mu.Unlock()
		reset(c)
		reset(s)
		return
	}
	p.links[l] = struct{}{}
	p.stats.Conns++
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { p.pump(l, c, s, false) })
	wg.Go(func() { p.pump(l, s, c, true) })
	wg.Wait()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
	l.close()
}

// chunk is bytes read from one side, waiting to be written to the other.
type chunk struct {
	b  []byte
	at time.Time
}

// pump forwards src to dst (the server's replies when reply): a reader
// takes bytes as they come, the writer holds them while the proxy is
// stalled and for the delay, then writes them. When src ends, what was
// read is still written (a request sent before its client gave up
// reaches the server), then the link closes.
func (p *Proxy) pump(l *link, src, dst net.Conn, reply bool) {
	queue := make(chan chunk, 64)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case queue <- chunk{buf[:n], time.Now()}:
				case <-l.dead:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer l.close()
	for ch := range queue {
		if !p.hold(l, ch, reply) {
			p.mu.Lock()
			p.stats.Dropped += 1 + len(queue)
			p.mu.Unlock()
			return
		}
		if _, err := dst.Write(ch.b); err != nil {
			return
		}
	}
}

// hold waits while the proxy is stalled and until the chunk's arrival +
// delay; false when a cut killed the link meanwhile.
func (p *Proxy) hold(l *link, ch chunk, reply bool) bool {
	dir := 0
	if reply {
		dir = 1
	}
	for {
		p.mu.Lock()
		if p.trap > 0 && !reply && len(ch.b) >= p.trap {
			p.trap = 0
			p.stats.Stalls++
			if p.stall == nil {
				p.stall = make(chan struct{})
			}
		}
		stall, delay := p.stall, p.delay
		if stall == nil && reply {
			stall = p.replies
		}
		p.mu.Unlock()
		if stall != nil {
			p.mu.Lock()
			p.held++
			p.heldB[dir] += len(ch.b)
			p.mu.Unlock()
			var ok bool
			select {
			case <-stall:
				ok = true
			case <-l.dead:
			}
			p.mu.Lock()
			p.held--
			p.heldB[dir] -= len(ch.b)
			p.mu.Unlock()
			if !ok {
				return false
			}
			continue
		}
		if wait := time.Until(ch.at.Add(delay)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-l.dead:
				t.Stop()
				return false
			}
			continue // a stall may have begun meanwhile
		}
		select {
		case <-l.dead:
			return false
		default:
			return true
		}
	}
}

// link is one proxied connection: the client's side and the server's.
type link struct {
	c, s net.Conn
	dead chan struct{} // closed when the link is cut or closed
	once sync.Once
}

// kill resets both sides.
func (l *link) kill() {
	l.once.Do(func() {
		close(l.dead)
		reset(l.c)
		reset(l.s)
	})
}

// close closes both sides normally, unless a cut reset them.
func (l *link) close() {
	l.once.Do(func() {
		close(l.dead)
		l.c.Close()
		l.s.Close()
	})
}

// reset closes c with a TCP reset, as a server that went away does.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// ServerAddr returns the host:port of a server URL, with the scheme's
// default port when it names none.
func ServerAddr(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("server address: %w", err)
	}
	if u.Host == "" {
		return "", fmt.Errorf("server address: %s names no host", rawURL)
	}
	if u.Port() != "" {
		return u.Host, nil
	}
	switch u.Scheme {
	case "postgres", "postgresql":
		return u.Host + ":5432", nil
	case "redis":
		return u.Host + ":6379", nil
	case "mongodb":
		return u.Host + ":27017", nil
	}
	return "", fmt.Errorf("server address: %s names no port", rawURL)
}
