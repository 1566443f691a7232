package bench

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/file"
)

// naive runs a session of steps events twice: the way the simplest chat
// loop saves, re-serialising the whole memory and rewriting one file after
// every step (with an fsync, for the same durability as the file store,
// and once without), and with one Append per step to the file store.
func naive(ctx context.Context, dir string, steps int) (Naive, error) {
	out := Naive{Steps: steps}
	var err error
	var durs []time.Duration
	if out.NaiveMS, out.NaiveBytes, durs, err = rewriteLoop(ctx, filepath.Join(dir, "naive.json"), steps, true); err != nil {
		return out, err
	}
	out.StepUS = map[string]float64{}
	for _, k := range []int{10, 100, 300, 1000} {
		if k <= len(durs) {
			// The median of the ten steps that end at step k.
			out.StepUS[key(k)] = percentile(durs[max(0, k-10):k], 50)
		}
	}
	if out.NoSyncMS, _, _, err = rewriteLoop(ctx, filepath.Join(dir, "naive-nosync.json"), steps, false); err != nil {
		return out, err
	}
	fdir := filepath.Join(dir, "naive-cairn")
	s, err := file.Open(ctx, fdir, cairn.StoreOptions{})
	if err != nil {
		return out, err
	}
	defer s.Close()
	id := "naive-" + cairn.NewID()
	if err := s.Create(ctx, cairn.SessionMeta{ID: id}); err != nil {
		return out, err
	}
	var infoBytes int64
	t0 := time.Now()
	for seq := int64(1); seq <= int64(steps); seq++ {
		if err := s.Append(ctx, id, seq-1, Event(seq)); err != nil {
			return out, err
		}
	}
	out.CairnMS = round(float64(time.Since(t0).Microseconds()) / 1e3)
	// Each append writes its log lines and overwrites the session's
	// info.json in place: count both.
	log, err := os.Stat(filepath.Join(fdir, cairn.DefaultNamespace, id, "events.jsonl"))
	if err != nil {
		return out, err
	}
	if fi, err := os.Stat(filepath.Join(fdir, cairn.DefaultNamespace, id, "info.json")); err == nil {
		infoBytes = fi.Size()
	}
	out.CairnBytes = log.Size() + int64(steps)*infoBytes
	out.Ratio = round(out.NaiveMS / out.CairnMS)
	return out, nil
}

// rewriteLoop adds one event per step to a memory and rewrites the whole
// document after each, returning the milliseconds and bytes it took.
func rewriteLoop(ctx context.Context, path string, steps int, sync bool) (float64, int64, []time.Duration, error) {
	m := &cairn.Memory{}
	var written int64
	durs := make([]time.Duration, 0, steps)
	t0 := time.Now()
	for seq := int64(1); seq <= int64(steps); seq++ {
		if err := ctx.Err(); err != nil {
			return 0, 0, nil, err
		}
		ts := time.Now()
		if _, err := m.Add(Event(seq)); err != nil {
			return 0, 0, nil, err
		}
		doc, err := m.DumpJSON()
		if err != nil {
			return 0, 0, nil, err
		}
		if err := writeFile(path, doc, sync); err != nil {
			return 0, 0, nil, err
		}
		durs = append(durs, time.Since(ts))
		written += int64(len(doc))
	}
	return round(float64(time.Since(t0).Microseconds()) / 1e3), written, durs, nil
}

func writeFile(path string, data []byte, sync bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
