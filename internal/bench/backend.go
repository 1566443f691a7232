package bench

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/config"
	"github.com/cairnhq/cairn/internal/realpath"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/store/file"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/postgres"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/sqlite"
)

// Default addresses of the servers Discover tries when their environment
// variable is not set.
const (
	DefaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	DefaultRedis    = "redis://127.0.0.1:6379/0"
	DefaultMongoDB  = "mongodb://127.0.0.1:27017/cairn"
)

// Discover returns the URLs of every backend it can reach: memory, and file
// and sqlite stores in dir, always; PostgreSQL, Redis and MongoDB from
// CAIRN_TEST_POSTGRES, CAIRN_TEST_REDIS and CAIRN_TEST_MONGODB, or at their
// default local addresses when something listens there.
func Discover(ctx context.Context, dir string) []string {
	urls, _ := discover(ctx, dir)
	return urls
}

// Skip is a backend that Run did not measure, and why.
type Skip struct {
	Backend string `json:"backend"`
	Reason  string `json:"reason"`
}

// discover is Discover, with the server backends it left out.
func discover(ctx context.Context, dir string) ([]string, []Skip) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // a URL names an absolute path
	}
	urls := []string{"memory:", realpath.URL("file", filepath.Join(dir, "file")), realpath.URL("sqlite", filepath.Join(dir, "sqlite", "cairn.db"))}
	var skipped []Skip
	for _, s := range []struct{ env, def string }{
		{"CAIRN_TEST_POSTGRES", DefaultPostgres},
		{"CAIRN_TEST_REDIS", DefaultRedis},
		{"CAIRN_TEST_MONGODB", DefaultMongoDB},
	} {
		if u := os.Getenv(s.env); u != "" {
			urls = append(urls, u)
		} else if reachable(ctx, s.def) {
			urls = append(urls, s.def)
		} else {
			u, _ := url.Parse(s.def)
			skipped = append(skipped, Skip{Backend: backendName(s.def),
				Reason: fmt.Sprintf("nothing listens at %s and %s is not set", u.Host, s.env)})
		}
	}
	return urls, skipped
}

// reachable reports whether something accepts connections at the URL's
// host and port.
func reachable(ctx context.Context, raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	d := net.Dialer{Timeout: 300 * time.Millisecond}
	c, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// backendName names the backend of a store URL: postgres for a
// postgresql:// URL, say.
func backendName(raw string) string {
	scheme, _, _ := strings.Cut(raw, ":")
	return config.SchemeBackend(scheme)
}

// backend is a store under measurement with the floor of its kind.
type backend struct {
	name      string
	store     cairn.Store
	ns        string
	floorName string
	floor     floor
	// atomic, where the backend's bare write has no condition (redis,
	// mongodb), is the least that a compare-and-append costs there: the
	// floor for an Append that must refuse a second writer.
	atomicName string
	atomic     writer
	// floorWriters, where the floor's writes can run side by side (file:
	// each writer its own file), makes n independent floor writers, so that
	// the concurrency measurement has a floor of its own.
	floorWriters func(n int) ([]writer, error)
	// size returns the bytes the backend holds for the sessions of ids
	// (or for the whole namespace), or false when it cannot tell.
	size  func(ctx context.Context, ids []string) (int64, bool, error)
	close func()
	fresh []string // sessions created ahead, empty
}

// writer is one write of a ~1 KB body.
type writer interface {
	write(ctx context.Context, body []byte) error
}

// floor is the cheapest work of a backend's kind: a bare single durable
// write, and rows stored and read back without cairn.
type floor interface {
	writer
	put(ctx context.Context, name string, rows [][]byte) error
	get(ctx context.Context, name string) ([][]byte, error)
	close(ctx context.Context) error
}

// openBackend opens the store of a URL in a namespace of its own, and its
// floor.
func openBackend(ctx context.Context, raw, dir string) (*backend, error) {
	ns := "bench_" + strings.ToLower(cairn.NewID()[len(cairn.NewID())-8:])
	opts := cairn.StoreOptions{Namespace: ns}
	b := &backend{name: backendName(raw), ns: ns}
	var err error
	switch b.name {
	case "memory":
		b.store, err = memory.New(opts)
		b.floorName, b.floor = "a 1 KB copy appended to a slice under a mutex", &memFloor{rows: map[string][][]byte{}}
	case "file":
		err = openFile(ctx, b, raw, opts)
	case "sqlite":
		err = openSQLite(ctx, b, raw, opts)
	case "postgres":
		var s *postgres.Store
		if s, err = postgres.Open(ctx, raw, opts); err == nil {
			b.store = s
			err = pgFloor(ctx, b, s)
		}
	case "redis":
		var s *redis.Store
		if s, err = redis.Open(ctx, raw, opts); err == nil {
			b.store = s
			redisFloor(b, s)
		}
	case "mongodb":
		err = openMongo(ctx, b, raw, opts)
	default:
		return nil, fmt.Errorf("no benchmark for store %s", text.RedactURL(raw))
	}
	if err != nil {
		if b.store != nil {
			b.store.Close()
		}
		return nil, fmt.Errorf("open %s: %w", text.RedactURL(raw), err)
	}
	closeStore := b.close
	b.close = func() {
		ctx := context.WithoutCancel(ctx)
		_ = b.floor.close(ctx)
		if closeStore != nil {
			closeStore()
		}
		b.store.Close()
	}
	if b.size == nil {
		b.size = func(context.Context, []string) (int64, bool, error) { return 0, false, nil }
	}
	return b, nil
}

// fileDir and sqlitePath return where a URL puts its store.
func urlPath(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Opaque != "" {
		return u.Opaque, nil
	}
	return realpath.FromURL(u.Path), nil
}

func openFile(ctx context.Context, b *backend, raw string, opts cairn.StoreOptions) error {
	dir, err := urlPath(raw)
	if err != nil {
		return err
	}
	s, err := file.Open(ctx, dir, opts)
	if err != nil {
		return err
	}
	b.store = s
	b.floorName = "write of 1 KB to an open file + fsync"
	floorDir := filepath.Join(dir, ".floor-"+opts.Namespace)
	b.floor, err = newFileFloor(floorDir)
	rounds := 0
	b.floorWriters = func(n int) ([]writer, error) {
		rounds++
		out := make([]writer, n)
		for i := range out {
			f, err := newFileFloor(filepath.Join(floorDir, fmt.Sprintf("conc-%d-%d", rounds, i)))
			if err != nil {
				return nil, err
			}
			out[i] = f
		}
		return out, nil
	}
	b.size = func(_ context.Context, ids []string) (int64, bool, error) {
		var n int64
		for _, id := range ids {
			err := filepath.Walk(filepath.Join(dir, opts.Namespace, id), func(_ string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					n += fi.Size()
				}
				return err
			})
			if err != nil {
				return 0, false, err
			}
		}
		return n, true, nil
	}
	b.close = func() { os.RemoveAll(filepath.Join(dir, opts.Namespace)) }
	return err
}

func openSQLite(ctx context.Context, b *backend, raw string, opts cairn.StoreOptions) error {
	path, err := urlPath(raw)
	if err != nil {
		return err
	}
	s, err := sqlite.Open(ctx, path, sqlite.Options{StoreOptions: opts})
	if err != nil {
		return err
	}
	b.store = s
	b.floorName = "one-row INSERT into a bare table, WAL, synchronous=FULL"
	f, err := newSQLiteFloor(ctx, filepath.Join(filepath.Dir(s.Path()), "floor-"+opts.Namespace+".db"))
	if err != nil {
		return err
	}
	b.floor = f
	b.size = func(ctx context.Context, _ []string) (int64, bool, error) { return sqliteSize(ctx, s.Path()) }
	return nil
}
