package cairn_test

import (
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/file"
)

// BenchmarkReplay loads a session of 10,000 ~1 KB events from the file
// store and folds it: what resuming a long session costs in decoding.
func BenchmarkReplay(b *testing.B) {
	ctx := b.Context()
	s, err := file.Open(ctx, b.TempDir(), cairn.StoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, cairn.SessionMeta{ID: "replay"}); err != nil {
		b.Fatal(err)
	}
	evs := benchEvents(10000)
	for i := 0; i < len(evs); i += 1000 {
		if err := s.Append(ctx, "replay", int64(i), evs[i:i+1000]...); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("load", func(b *testing.B) {
		cpuLoop(b, func() error { _, err := s.Load(ctx, "replay", 0); return err })
	})
	b.Run("load+fold", func(b *testing.B) {
		cpuLoop(b, func() error {
			rec, err := s.Load(ctx, "replay", 0)
			if err != nil {
				return err
			}
			_, err = cairn.Fold(rec.Events)
			return err
		})
	})
}
