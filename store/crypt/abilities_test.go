package crypt_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/memory"
)

// abilities are the optional interfaces of package cairn, each with a test
// of whether a store has it. A LocalLocker whose LockFile answers "" has
// no lock files, as its contract says.
var abilities = map[string]func(cairn.Store) bool{
	"LocalLocker": func(s cairn.Store) bool {
		l, ok := s.(driver.LocalLocker)
		return ok && l.LockFile("s") != ""
	},
	"Leaser":      func(s cairn.Store) bool { _, ok := s.(cairn.Leaser); return ok },
	"Claimer":     func(s cairn.Store) bool { _, ok := s.(driver.Claimer); return ok },
	"Sweeper":     func(s cairn.Store) bool { _, ok := s.(driver.Sweeper); return ok },
	"Checker":     func(s cairn.Store) bool { _, ok := s.(driver.Checker); return ok },
	"Snapshotter": func(s cairn.Store) bool { _, ok := s.(cairn.Snapshotter); return ok },
	// The encrypting store never searches: the events it writes are
	// sealed, and the store it wraps indexes no sealed text.
	"Searcher": func(s cairn.Store) bool { _, ok := s.(driver.Searcher); return ok },
}

// onlyStore hides every optional ability of the store it holds.
type onlyStore struct{ cairn.Store }

// leaseOnly has leases and nothing else.
type leaseOnly struct {
	cairn.Store
	cairn.Leaser
}

// checkOnly has checks and nothing else; leaseCheck, leases and checks.
type checkOnly struct {
	cairn.Store
	driver.Checker
}

type leaseClaim struct {
	cairn.Store
	cairn.Leaser
	driver.Claimer
}

type leaseCheck struct {
	cairn.Store
	cairn.Leaser
	driver.Checker
}

type claimCheck struct {
	cairn.Store
	cairn.Leaser
	driver.Claimer
	driver.Checker
}

// snapOnly and the types after it are the combinations above with
// snapshots.
type snapOnly struct {
	cairn.Store
	cairn.Snapshotter
}

type leaseSnap struct {
	cairn.Store
	cairn.Leaser
	cairn.Snapshotter
}

type checkSnap struct {
	cairn.Store
	driver.Checker
	cairn.Snapshotter
}

type leaseClaimSnap struct {
	cairn.Store
	cairn.Leaser
	driver.Claimer
	cairn.Snapshotter
}

type leaseCheckSnap struct {
	cairn.Store
	cairn.Leaser
	driver.Checker
	cairn.Snapshotter
}

type claimCheckSnap struct {
	cairn.Store
	cairn.Leaser
	driver.Claimer
	driver.Checker
	cairn.Snapshotter
}

// fakeCheck is a driver.Checker that finds nothing.
type fakeCheck struct{}

func (fakeCheck) Check(context.Context) (*driver.CheckReport, error) {
	return &driver.CheckReport{}, nil
}

// TestWrap_Abilities: the encrypting store has exactly the abilities of
// the store it wraps (Sweeper always: it sweeps data keys), whichever way
// it is made, so that no caller can lose leases or claims by encrypting.
func TestWrap_Abilities(t *testing.T) {
	db := memory.NewDB()
	mem, err := db.Open(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := db.Open(cairn.StoreOptions{Namespace: crypt.KeyNamespace("")})
	if err != nil {
		t.Fatal(err)
	}
	ring := crypttest.NewKeyring(t)
	tests := []struct {
		name  string
		inner cairn.Store
		want  []string
	}{
		{"leases and claims", leaseClaim{onlyStore{mem}, mem, mem}, []string{"Claimer", "Leaser", "Sweeper"}},
		{"leases only", leaseOnly{onlyStore{mem}, mem}, []string{"Leaser", "Sweeper"}},
		{"no ability", onlyStore{mem}, []string{"Sweeper"}},
		{"checks only", checkOnly{onlyStore{mem}, fakeCheck{}}, []string{"Checker", "Sweeper"}},
		{"leases and checks", leaseCheck{onlyStore{mem}, mem, fakeCheck{}}, []string{"Checker", "Leaser", "Sweeper"}},
		{"leases, claims and checks", claimCheck{onlyStore{mem}, mem, mem, fakeCheck{}}, []string{"Checker", "Claimer", "Leaser", "Sweeper"}},
		{"snapshots only", snapOnly{onlyStore{mem}, mem}, []string{"Snapshotter", "Sweeper"}},
		{"leases and snapshots", leaseSnap{onlyStore{mem}, mem, mem}, []string{"Leaser", "Snapshotter", "Sweeper"}},
		{"checks and snapshots", checkSnap{onlyStore{mem}, fakeCheck{}, mem}, []string{"Checker", "Snapshotter", "Sweeper"}},
		{"leases, claims and snapshots", leaseClaimSnap{onlyStore{mem}, mem, mem, mem}, []string{"Claimer", "Leaser", "Snapshotter", "Sweeper"}},
		{"leases, checks and snapshots", leaseCheckSnap{onlyStore{mem}, mem, fakeCheck{}, mem}, []string{"Checker", "Leaser", "Snapshotter", "Sweeper"}},
		{"every ability", claimCheckSnap{onlyStore{mem}, mem, mem, fakeCheck{}, mem}, []string{"Checker", "Claimer", "Leaser", "Snapshotter", "Sweeper"}},
	}
	for _, tt := range tests {
		for _, r := range []*crypt.Keyring{ring, nil} {
			s, err := crypt.Wrap(tt.inner, crypt.Options{Keyring: r, Keys: keys})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for name, has := range abilities {
				if has(s) {
					got = append(got, name)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s, keyring %v: wrapper has %v, want %v", tt.name, r != nil, got, tt.want)
			}
		}
	}
	// Opened by URL: SQLite has leases, checks and snapshots, and no
	// claims.
	s, err := crypt.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "c.db"), cairn.StoreOptions{}, ring)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, has := range abilities {
		if name == "Searcher" {
			if has(s) {
				t.Errorf("over sqlite: the wrapper has Searcher")
			}
			continue
		}
		if has(s) != has(s.Inner()) && name != "Sweeper" {
			t.Errorf("over sqlite: wrapper has %s = %v, the store = %v", name, has(s), has(s.Inner()))
		}
	}
	// The same lock files as the store it wraps, so that encrypting and
	// plain processes of one store lock each other out.
	if got, want := s.(driver.LocalLocker).LockFile("s1"), s.Inner().(driver.LocalLocker).LockFile("s1"); got != want || got == "" {
		t.Errorf("over sqlite: wrapper's lock file %q, the store's %q", got, want)
	}
}

// TestWrap_KnowsEveryAbility fails when package cairn gains an optional
// store interface that the wrapper does not consider: teach withAbilities
// (lease.go) to carry it, then add it to abilities above.
func TestWrap_KnowsEveryAbility(t *testing.T) {
	root := filepath.Join("..", "..")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, ent := range entries {
		name := ent.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "cairn" {
			continue
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, spec := range g.Specs {
				ts := spec.(*ast.TypeSpec)
				if _, ok := ts.Type.(*ast.InterfaceType); !ok || !ts.Name.IsExported() || ts.Name.Name == "Store" {
					continue
				}
				if _, ok := abilities[ts.Name.Name]; !ok {
					t.Errorf("package cairn has the interface %s, which the encrypting store does not carry", ts.Name.Name)
				}
			}
		}
	}
}
