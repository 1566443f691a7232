package bench

import (
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn/internal/testenv"
)

// BenchmarkAppendCPU appends the realistic event of `cairn bench` to one
// session per backend, as sub-benchmarks named after the backends, and
// reports the process's CPU time per append ("cpu-µs/op") beside the time:
// the loop to profile for where an append's microseconds go, e.g.
//
//	go test ./internal/bench -run - -bench AppendCPU/file -benchtime 20000x -cpuprofile file.pprof
//	go tool pprof -top file.pprof
//
// Server backends need CAIRN_TEST_POSTGRES, CAIRN_TEST_REDIS and
// CAIRN_TEST_MONGODB.
func BenchmarkAppendCPU(b *testing.B) {
	dir := b.TempDir()
	urls := []string{"memory:", "file://" + filepath.Join(dir, "file"), "sqlite://" + filepath.Join(dir, "sqlite", "cairn.db")}
	for _, u := range []string{testenv.Postgres, testenv.Redis, testenv.MongoDB} {
		urls = append(urls, "env:"+u)
	}
	for _, u := range urls {
		name := backendName(u)
		if name == "env" {
			name = map[string]string{testenv.Postgres: "postgres", testenv.Redis: "redis", testenv.MongoDB: "mongodb"}[u[4:]]
		}
		b.Run(name, func(b *testing.B) {
			if u[:4] == "env:" {
				u = testenv.URL(b, u[4:])
			}
			bk, err := openBackend(b.Context(), u, dir)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(bk.close)
			id, err := bk.session(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			if err := prefill(b.Context(), bk.store, id, 0, 10); err != nil {
				b.Fatal(err)
			}
			evs := Events(11, int64(10+b.N))
			b.ReportAllocs()
			b.ResetTimer()
			c, err := costOf(b.N, func(i int) error { return bk.store.Append(b.Context(), id, int64(10+i), evs[i]) })
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(c.cpuUS, "cpu-µs/op")
		})
	}
}
