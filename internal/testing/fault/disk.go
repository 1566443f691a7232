package fault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

// SmallDisk mounts a tmpfs of size bytes on a new folder and unmounts it
// when the test ends. Stores put there fail their writes with the
// kernel's ENOSPC once it is full (Fill). Mounting needs root or
// CAP_SYS_ADMIN: without it the test is skipped, or failed under CI
// (CI=true), which runs as root. Use NoSpace where mounting cannot work.
func SmallDisk(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("mount a %d-byte tmpfs on %s: %v: %s", size, dir, err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg + " (needs root; fault.NoSpace injects ENOSPC instead)")
	}
	t.Cleanup(func() {
		for range 50 {
			if err := exec.Command("umount", dir).Run(); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond) // a process of the test may still have files open
		}
		_ = exec.Command("umount", "-l", dir).Run()
	})
	return dir
}

// Fill writes a file in dir until the file system is full, leaving keep
// bytes free (rounded to the file system's blocks), and returns the file's
// path: remove it to free the space.
func Fill(t testing.TB, dir string, keep int64) string {
	t.Helper()
	free, err := freeSpace(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for left := free - keep; left > 0; {
		n := min(left, int64(len(buf)))
		w, err := f.Write(buf[:n])
		left -= int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// ErrNoSpace is the error NoSpace injects: what a write on a full disk
// returns, syscall.ENOSPC in a *os.PathError.
var ErrNoSpace error = &os.PathError{Op: "write", Path: "(injected full disk)", Err: syscall.ENOSPC}

// NoSpace wraps st so that every write (Create, Append, Delete, and the
// lease and snapshot calls when st has them) fails with ErrNoSpace once
// full reports true, while reads go on: a full disk injected at the
// store's edge, for machines where SmallDisk cannot mount a tmpfs. It has
// st's leases and snapshots.
func NoSpace(st cairn.Store, full func() bool) cairn.Store {
	n := &noSpace{Store: st, full: full}
	l, leases := st.(cairn.Leaser)
	sn, snaps := st.(cairn.Snapshotter)
	switch {
	case leases && snaps:
		return &noSpaceLeaserSnapshots{noSpaceLeaser: &noSpaceLeaser{noSpace: n, l: l}, noSpaceSnapshots: noSpaceSnapshots{n: n, sn: sn}}
	case leases:
		return &noSpaceLeaser{noSpace: n, l: l}
	case snaps:
		return &noSpaceSnapshotter{noSpace: n, noSpaceSnapshots: noSpaceSnapshots{n: n, sn: sn}}
	}
	return n
}

type noSpace struct {
	cairn.Store
	full func() bool
}

func (n *noSpace) fail() error {
	if n.full() {
		return ErrNoSpace
	}
	return nil
}

func (n *noSpace) Create(ctx context.Context, meta cairn.SessionMeta) error {
	if err := n.fail(); err != nil {
		return fmt.Errorf("create %s: %w", meta.ID, err)
	}
	return n.Store.Create(ctx, meta)
}

func (n *noSpace) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) error {
	if err := n.fail(); err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	return n.Store.Append(ctx, id, expectSeq, events...)
}

func (n *noSpace) Delete(ctx context.Context, id string) error {
	if err := n.fail(); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	return n.Store.Delete(ctx, id)
}

type noSpaceLeaser struct {
	*noSpace
	l cairn.Leaser
}

func (n *noSpaceLeaser) Acquire(ctx context.Context, id, holder string, ttl time.Duration) (cairn.Lease, error) {
	if err := n.fail(); err != nil {
		return cairn.Lease{}, fmt.Errorf("acquire %s: %w", id, err)
	}
	return n.l.Acquire(ctx, id, holder, ttl)
}

func (n *noSpaceLeaser) Takeover(ctx context.Context, id, holder string, ttl time.Duration) (cairn.Lease, error) {
	if err := n.fail(); err != nil {
		return cairn.Lease{}, fmt.Errorf("takeover %s: %w", id, err)
	}
	return n.l.Takeover(ctx, id, holder, ttl)
}

func (n *noSpaceLeaser) Renew(ctx context.Context, lease cairn.Lease, ttl time.Duration) (cairn.Lease, error) {
	if err := n.fail(); err != nil {
		return cairn.Lease{}, fmt.Errorf("renew %s: %w", lease.Session, err)
	}
	return n.l.Renew(ctx, lease, ttl)
}

func (n *noSpaceLeaser) Release(ctx context.Context, lease cairn.Lease) error {
	if err := n.fail(); err != nil {
		return fmt.Errorf("release %s: %w", lease.Session, err)
	}
	return n.l.Release(ctx, lease)
}

func (n *noSpaceLeaser) CurrentLease(ctx context.Context, id string) (cairn.Lease, error) {
	return n.l.CurrentLease(ctx, id)
}

func (n *noSpaceLeaser) AppendFenced(ctx context.Context, id string, lease cairn.Lease, expectSeq int64, events ...cairn.Event) error {
	if err := n.fail(); err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	return n.l.AppendFenced(ctx, id, lease, expectSeq, events...)
}

func (n *noSpaceLeaser) CurrentLeases(ctx context.Context, ids []string) (map[string]cairn.Lease, error) {
	return n.l.CurrentLeases(ctx, ids)
}

// noSpaceSnapshots carries cairn.Snapshotter: puts and drops fail on a
// full disk, loads go on.
type noSpaceSnapshots struct {
	n  *noSpace
	sn cairn.Snapshotter
}

type noSpaceSnapshotter struct {
	*noSpace
	noSpaceSnapshots
}

type noSpaceLeaserSnapshots struct {
	*noSpaceLeaser
	noSpaceSnapshots
}

func (n noSpaceSnapshots) PutSnapshot(ctx context.Context, id string, snap cairn.Snapshot) error {
	if err := n.n.fail(); err != nil {
		return fmt.Errorf("put snapshot %s: %w", id, err)
	}
	return n.sn.PutSnapshot(ctx, id, snap)
}

func (n noSpaceSnapshots) LoadSnapshot(ctx context.Context, id string) (*cairn.Snapshot, error) {
	return n.sn.LoadSnapshot(ctx, id)
}

func (n noSpaceSnapshots) DropSnapshot(ctx context.Context, id string) error {
	if err := n.n.fail(); err != nil {
		return fmt.Errorf("drop snapshot %s: %w", id, err)
	}
	return n.sn.DropSnapshot(ctx, id)
}
