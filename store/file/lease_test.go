//go:build linux || darwin

package file_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/file"
	"github.com/cairnhq/cairn/store/storetest"
)

const ttl = 30 * time.Second

func leasePath(dir, id string) string { return filepath.Join(dir, ns, id, "lease.json") }

// newLeased opens a store on dir in the tests namespace and creates id.
func newLeased(t *testing.T, dir, id string, opts cairn.StoreOptions) *file.Store {
	t.Helper()
	opts.Namespace = ns
	s := openIn(t, dir, opts)
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatal(err)
	}
	return s
}

func mustAcquire(t *testing.T, s *file.Store, id, holder string) cairn.Lease {
	t.Helper()
	l, err := s.Acquire(t.Context(), id, holder, ttl)
	if err != nil {
		t.Fatalf("Acquire(%s, %s): %v", id, holder, err)
	}
	return l
}

// readLeaseFile decodes a session's lease.json by hand.
func readLeaseFile(t *testing.T, dir, id string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(leasePath(dir, id))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("lease.json is not JSON: %v\n%s", err, b)
	}
	return m
}

// TestStore_LeaseSurvivesReopen: a lease, and the token counter kept after
// Release, are on disk: a store opened again on the folder sees them.
func TestStore_LeaseSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	const id = "s1"
	s := newLeased(t, dir, id, cairn.StoreOptions{})
	a := mustAcquire(t, s, id, "worker-a")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	cur, err := s.CurrentLease(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Holder != a.Holder || cur.Token != a.Token || !cur.Expires.Equal(a.Expires) {
		t.Errorf("CurrentLease after reopening = %+v, want %+v", cur, a)
	}
	if _, err := s.Acquire(t.Context(), id, "worker-b", ttl); !errors.Is(err, cairn.ErrLeaseHeld) {
		t.Errorf("Acquire of a lease held before the reopen: got %v, want ErrLeaseHeld", err)
	}
	if err := s.AppendFenced(t.Context(), id, a, 0, storetest.Custom(1, "x")); err != nil {
		t.Errorf("AppendFenced with the lease taken before the reopen: %v", err)
	}
	if err := s.Release(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	m := readLeaseFile(t, dir, id)
	if m["format"] != "cairn.file.lease" || m["version"] != 1.0 || m["session"] != id || m["holder"] != "" ||
		m["token"] != float64(a.Token) || m["expires"] != nil {
		t.Errorf("lease.json after Release = %v, want no holder and no expiry, token %d kept", m, a.Token)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	b := mustAcquire(t, s, id, "worker-b")
	if b.Token <= a.Token {
		t.Errorf("token after Release and reopen %d, want more than %d", b.Token, a.Token)
	}
	if _, err := os.Stat(leasePath(dir, id) + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a temporary lease file was left behind: %v", err)
	}
}

// TestStore_LeaseSharedFolder opens two stores on one folder, as two
// processes would: each sees the other's leases, and a takeover by one
// fences the other, whose refused append writes nothing.
func TestStore_LeaseSharedFolder(t *testing.T) {
	dir := t.TempDir()
	const id = "shared"
	s1 := newLeased(t, dir, id, cairn.StoreOptions{})
	s2 := openIn(t, dir, cairn.StoreOptions{Namespace: ns})

	a := mustAcquire(t, s1, id, "proc-1")
	if err := s1.AppendFenced(t.Context(), id, a, 0, storetest.Custom(1, "x")); err != nil {
		t.Fatal(err)
	}
	if cur, err := s2.CurrentLease(t.Context(), id); err != nil || cur.Holder != "proc-1" || cur.Token != a.Token {
		t.Errorf("the other store's CurrentLease = %+v, %v; want proc-1's lease", cur, err)
	}
	_, err := s2.Acquire(t.Context(), id, "proc-2", ttl)
	if he, ok := errors.AsType[*cairn.LeaseHeldError](err); !ok || he.Holder != "proc-1" || !he.Expires.Equal(a.Expires) {
		t.Fatalf("Acquire from the other store: got %v, want a *LeaseHeldError naming proc-1 until %s", err, a.Expires)
	}

	b, err := s2.Takeover(t.Context(), id, "proc-2", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if b.Token <= a.Token {
		t.Errorf("Takeover token %d, want more than %d", b.Token, a.Token)
	}
	before := readLog(t, dir, id)
	if err := s1.AppendFenced(t.Context(), id, a, 1, storetest.Custom(2, "x")); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("AppendFenced by the store taken over: got %v, want ErrLeaseLost", err)
	}
	if after := readLog(t, dir, id); string(after) != string(before) {
		t.Errorf("the refused append changed the log:\n%s\nwant\n%s", after, before)
	}
	if _, err := s1.Renew(t.Context(), a, ttl); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("Renew by the store taken over: got %v, want ErrLeaseLost", err)
	}
	if err := s1.Release(t.Context(), a); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("Release by the store taken over: got %v, want ErrLeaseLost", err)
	}
	if err := s2.AppendFenced(t.Context(), id, b, 1, storetest.Custom(2, "x")); err != nil {
		t.Fatalf("AppendFenced by the new holder: %v", err)
	}
	rec, err := s1.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Events) != 2 || rec.Info.LastSeq != 2 {
		t.Errorf("the first store loads %d events, last seq %d; want 2 and 2", len(rec.Events), rec.Info.LastSeq)
	}
	if cur, _ := s1.CurrentLease(t.Context(), id); cur.Holder != "proc-2" || cur.Token != b.Token {
		t.Errorf("the first store's CurrentLease = %+v, want proc-2's", cur)
	}
}

// TestStore_LeaseSharedFolderRace races Acquires from two stores on one
// folder (exactly one wins), then the fenced appends of an old holder and
// a new one (only the new one's gets in).
func TestStore_LeaseSharedFolderRace(t *testing.T) {
	dir := t.TempDir()
	const id = "race"
	stores := []*file.Store{newLeased(t, dir, id, cairn.StoreOptions{}), openIn(t, dir, cairn.StoreOptions{Namespace: ns})}
	won, errs := storetest.Race(16, cairn.ErrLeaseHeld, func(i int) (cairn.Lease, error) {
		return stores[i%2].Acquire(t.Context(), id, fmt.Sprintf("w%d", i), ttl)
	})
	if len(errs) > 0 || len(won) != 1 {
		t.Fatalf("%d winners (%v) and errors %v; want exactly 1 winner and no errors", len(won), won, errs)
	}
	a := won[0]
	b, err := stores[1].Takeover(t.Context(), id, "taker", ttl)
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg         sync.WaitGroup
		aErr, bErr error
	)
	wg.Go(func() { aErr = stores[0].AppendFenced(t.Context(), id, a, 0, storetest.Custom(1, "x")) })
	wg.Go(func() { bErr = stores[1].AppendFenced(t.Context(), id, b, 0, storetest.Custom(1, "x")) })
	wg.Wait()
	if !errors.Is(aErr, cairn.ErrLeaseLost) || bErr != nil {
		t.Errorf("old holder's append: %v (want ErrLeaseLost); new holder's: %v (want nil)", aErr, bErr)
	}
}

// TestStore_LeaseFileDamaged: a lease.json the store cannot read is never
// taken for a free lease. Every lease call and fenced append fails with an
// error naming the file, and leaves it as it was; plain appends and loads,
// which do not read it, go on; Delete removes it with the session; once it
// is removed by hand the session can be leased again.
func TestStore_LeaseFileDamaged(t *testing.T) {
	lease := func(fields string) string {
		return `{"format":"cairn.file.lease","version":1,"session":"s1",` + fields + `}`
	}
	cases := []struct {
		name    string
		content string // written as lease.json; "" with dir set
		dir     bool   // lease.json is a folder
	}{
		{name: "empty", content: ""},
		{name: "garbage", content: "\x00\x13garbage"},
		{name: "torn", content: lease(`"holder":"w","token":7,"expires":"2026-01-02T03:04:05Z"`)[:60]},
		{name: "trailing", content: lease(`"holder":"","token":7`) + "{}"},
		{name: "other format", content: `{"format":"cairn.file.session","version":1,"session":"s1","token":7}`},
		{name: "future version", content: `{"format":"cairn.file.lease","version":2,"session":"s1","token":7}`},
		{name: "other session", content: `{"format":"cairn.file.lease","version":1,"session":"s2","token":7}`},
		{name: "no token", content: lease(`"holder":"","token":0`)},
		{name: "holder without expiry", content: lease(`"holder":"w","token":7`)},
		{name: "folder", dir: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			const id = "s1"
			s := newLeased(t, dir, id, cairn.StoreOptions{})
			p := leasePath(dir, id)
			if c.dir {
				if err := os.Mkdir(p, 0o700); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(p, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			old := cairn.Lease{Session: id, Holder: "w", Token: 7}
			ctx := t.Context()
			for name, err := range leaseCalls(ctx, s, id, "w2", old) {
				if err == nil || errors.Is(err, cairn.ErrLeaseHeld) || errors.Is(err, cairn.ErrLeaseLost) || errors.Is(err, cairn.ErrNotFound) {
					t.Errorf("%s with a damaged lease file: got %v, want an error of its own", name, err)
				} else if !strings.Contains(err.Error(), p) {
					t.Errorf("%s: error %q does not name %s", name, err, p)
				}
			}
			if !c.dir {
				if b, _ := os.ReadFile(p); string(b) != c.content {
					t.Errorf("the damaged lease file was changed to %q", b)
				}
			}
			if err := s.Append(ctx, id, 0, storetest.Custom(1, "x")); err != nil {
				t.Errorf("plain Append beside a damaged lease file: %v", err)
			}
			if _, err := s.Load(ctx, id, 0); err != nil {
				t.Errorf("Load beside a damaged lease file: %v", err)
			}
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			l := mustAcquire(t, s, id, "w2")
			if l.Token <= 7 {
				t.Errorf("token after the damaged file was removed: %d, want above the lost 7", l.Token)
			}
			if err := s.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestStore_LeaseLeftoverTemp: a temporary lease file left by a crash
// before its rename is not the lease: the lease is the one before it, and
// the next lease change replaces the leftover.
func TestStore_LeaseLeftoverTemp(t *testing.T) {
	dir := t.TempDir()
	const id = "s1"
	s := newLeased(t, dir, id, cairn.StoreOptions{})
	a := mustAcquire(t, s, id, "worker-a")
	tmp := leasePath(dir, id) + ".tmp"
	if err := os.WriteFile(tmp, []byte(`{"format":"cairn.file.lease","ver`), 0o600); err != nil {
		t.Fatal(err)
	}
	s2 := openIn(t, dir, cairn.StoreOptions{Namespace: ns})
	if cur, err := s2.CurrentLease(t.Context(), id); err != nil || cur.Token != a.Token {
		t.Errorf("CurrentLease beside a leftover temporary file = %+v, %v; want %+v", cur, err, a)
	}
	if _, err := s2.Renew(t.Context(), a, ttl); err != nil {
		t.Fatalf("Renew beside a leftover temporary file: %v", err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the leftover temporary file is still there after a lease change: %v", err)
	}
	if m := readLeaseFile(t, dir, id); m["holder"] != "worker-a" {
		t.Errorf("lease.json after Renew = %v, want worker-a's", m)
	}
}

// leaseCalls makes every lease call of s on session id, the new leases
// for holder and the others with lease (AppendFenced at seq 0), and
// returns their errors by name.
func leaseCalls(ctx context.Context, s *file.Store, id, holder string, lease cairn.Lease) map[string]error {
	calls := map[string]error{}
	_, calls["Acquire"] = s.Acquire(ctx, id, holder, ttl)
	_, calls["Takeover"] = s.Takeover(ctx, id, holder, ttl)
	_, calls["Renew"] = s.Renew(ctx, lease, ttl)
	calls["Release"] = s.Release(ctx, lease)
	_, calls["CurrentLease"] = s.CurrentLease(ctx, id)
	calls["AppendFenced"] = s.AppendFenced(ctx, id, lease, 0, storetest.Custom(1, "x"))
	return calls
}

// TestStore_LeaseBadIDs: IDs that could leave the folder are refused by
// every lease call, and nothing is written outside the store's folder.
func TestStore_LeaseBadIDs(t *testing.T) {
	parent := t.TempDir()
	s := openIn(t, filepath.Join(parent, "store"), cairn.StoreOptions{Namespace: ns})
	ctx := t.Context()
	for _, id := range []string{"../x", "..", ".", "a/b", "/abs", "", "x/../../y", `..\x`} {
		lease := cairn.Lease{Session: id, Holder: "h", Token: 1}
		for name, err := range leaseCalls(ctx, s, id, "h", lease) {
			if !errors.Is(err, cairn.ErrInvalidID) {
				t.Errorf("%s(%q): got %v, want ErrInvalidID", name, id, err)
			}
		}
	}
	var got []string
	err := filepath.WalkDir(parent, func(p string, _ fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(parent, p)
		got = append(got, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{".", "store", "store/" + ns}; !slices.Equal(got, want) {
		t.Errorf("after bad IDs the folders hold %v, want %v", got, want)
	}
}

// TestStore_LeaseTTL: on a store with a TTL an expired session has no
// lease calls (ErrNotFound), the session's TTL is not moved by its lease,
// and a session created again in its place starts unleased, with larger
// tokens, and refuses the old lease.
func TestStore_LeaseTTL(t *testing.T) {
	dir := t.TempDir()
	clock := storetest.NewClock()
	const id = "s1"
	s := newLeased(t, dir, id, cairn.StoreOptions{TTL: time.Minute, Now: clock.Now})
	a := mustAcquire(t, s, id, "worker-a")
	clock.Advance(50 * time.Second)
	if _, err := s.Renew(t.Context(), a, ttl); err != nil {
		t.Fatal(err)
	}
	clock.Advance(11 * time.Second)
	ctx := t.Context()
	for name, err := range leaseCalls(ctx, s, id, "w2", a) {
		if !errors.Is(err, cairn.ErrNotFound) {
			t.Errorf("%s on an expired session: got %v, want ErrNotFound", name, err)
		}
	}
	if err := s.Create(ctx, cairn.SessionMeta{ID: id}); err != nil {
		t.Fatalf("Create over the expired session: %v", err)
	}
	if cur, err := s.CurrentLease(ctx, id); err != nil || cur.Holder != "" {
		t.Errorf("CurrentLease of the new session = %+v, %v; want no holder", cur, err)
	}
	if err := s.AppendFenced(ctx, id, a, 0, storetest.Custom(1, "x")); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("AppendFenced with the expired session's lease: got %v, want ErrLeaseLost", err)
	}
	if b := mustAcquire(t, s, id, "worker-a"); b.Token <= a.Token {
		t.Errorf("token of the new session %d, want more than the old session's %d", b.Token, a.Token)
	}
}
