package bench

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn/internal/testing/testenv"
)

// BenchmarkAppendCPU appends the realistic event of `cairn bench` to one
// session per backend, as sub-benchmarks named after the backends, and
// makes the backend's floor write in sub-benchmarks "BACKEND-floor"; it
// reports the process's CPU time per call ("cpu-µs/op") beside the time.
// They are the loops to profile for where an append's microseconds go,
// e.g.
//
//	go test -c -o bench.test ./internal/bench
//	./bench.test -test.run - -test.bench 'AppendCPU/file$' -test.benchtime 20000x -test.cpuprofile file.pprof
//	./bench.test -test.run - -test.bench 'AppendCPU/file-floor' -test.benchtime 20000x -test.cpuprofile floor.pprof
//	go tool pprof -top -cum bench.test file.pprof
//	go tool pprof -top -cum -diff_base floor.pprof bench.test file.pprof
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
		open := func(b *testing.B) *backend {
			if u[:4] == "env:" {
				u = testenv.URL(b, u[4:])
			}
			bk, err := openBackend(b.Context(), u, dir)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(bk.close)
			return bk
		}
		b.Run(name, func(b *testing.B) {
			bk := open(b)
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
		b.Run(name+"-floor", func(b *testing.B) {
			bk := open(b)
			body, _ := json.Marshal(Event(1))
			b.ReportAllocs()
			b.ResetTimer()
			c, err := costOf(b.N, func(int) error { return bk.floor.write(b.Context(), body) })
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(c.cpuUS, "cpu-µs/op")
		})
	}
}
