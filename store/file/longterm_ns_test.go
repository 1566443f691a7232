//go:build linux || darwin

package file_test

import (
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/lttest"
	"github.com/cairnhq/cairn/store/file"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestLongTermConformance_Namespace runs the suite on the memory of a
// session namespace, in folders whose default namespace holds items too.
func TestLongTermConformance_Namespace(t *testing.T) {
	dir := storetest.PerTest(func(t *testing.T) string {
		dir := t.TempDir()
		lttest.PutAll(t, openLongTerm(t, dir, ""), lttest.ForeignItems)
		return dir
	})
	lttest.Run(t, lttest.Abilities{Sweep: true}, func(t *testing.T, opts longterm.Options) longterm.Store {
		opts.Namespace = "tenant"
		s, err := file.OpenLongTerm(t.Context(), dir(t), opts)
		return storetest.Opened(t, s, err)
	})
}

// TestLongTerm_SessionNamespaces: the memories of the default session
// namespace and two others, in one folder, keep apart; and the sessions of
// a namespace beside its memory's folder list as before.
func TestLongTerm_SessionNamespaces(t *testing.T) {
	dir := t.TempDir()
	lttest.SessionNamespaces(t, [3]string{"", "a", "b"}, func(t *testing.T, ns string) longterm.Store {
		return openLongTerm(t, dir, ns)
	})
	s, err := file.Open(t.Context(), dir, cairn.StoreOptions{Namespace: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(t.Context(), "s1", 0, storetest.UserTurn(0, "r1", "hello")...); err != nil {
		t.Fatal(err)
	}
	page, err := s.List(t.Context(), cairn.ListOptions{})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].ID != "s1" {
		t.Errorf("List of namespace a beside its memory = %v, %v; want s1 alone", page, err)
	}
	if _, err := file.OpenLongTerm(t.Context(), dir, longterm.Options{Namespace: "no/slash"}); err == nil {
		t.Error("OpenLongTerm of namespace \"no/slash\" succeeded; want the namespace refused")
	}
}

// openLongTerm opens the memory of session namespace ns in dir.
func openLongTerm(t *testing.T, dir, ns string) *file.LongTerm {
	t.Helper()
	s, err := file.OpenLongTerm(t.Context(), dir, longterm.Options{Namespace: ns})
	return storetest.Opened(t, s, err)
}
