package ltdriver

import (
	"context"

	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/longterm"
)

// Guard makes the checks every long-term method opens with, as
// driver.Guard does for a session store: that the store is not closed
// (cairn.ErrClosed), then the arguments, with the Check function of the
// method. The zero Guard is open. It is safe for concurrent use.
type Guard struct {
	driver.Guard
}

// Put checks a Put call: an open store, then CheckPut, whose item it
// returns.
func (g *Guard) Put(ctx context.Context, o longterm.Options, item longterm.Item, po longterm.PutOptions) (longterm.Item, error) {
	if err := g.Check(); err != nil {
		return item, err
	}
	return CheckPut(ctx, o, item, po)
}

// Key checks a Get call: an open store, then CheckKey.
func (g *Guard) Key(namespace, key string) error {
	if err := g.Check(); err != nil {
		return err
	}
	return CheckKey(namespace, key)
}

// Delete checks a Delete call: an open store, then CheckDelete.
func (g *Guard) Delete(namespace, key string, ifVersion int64) error {
	if err := g.Check(); err != nil {
		return err
	}
	return CheckDelete(namespace, key, ifVersion)
}

// DeleteNamespace checks a DeleteNamespace call: an open store, then
// CheckDeleteNamespace.
func (g *Guard) DeleteNamespace(prefix string) error {
	if err := g.Check(); err != nil {
		return err
	}
	return CheckDeleteNamespace(prefix)
}

// List checks a List call: an open store, then CheckList, whose options
// and cursor it returns.
func (g *Guard) List(o longterm.ListOptions) (longterm.ListOptions, Cursor, error) {
	if err := g.Check(); err != nil {
		return o, Cursor{}, err
	}
	return CheckList(o)
}

// Namespaces checks a Namespaces call: an open store, then
// CheckNamespaces, whose options it returns.
func (g *Guard) Namespaces(o longterm.NamespaceOptions) (longterm.NamespaceOptions, error) {
	if err := g.Check(); err != nil {
		return o, err
	}
	return CheckNamespaces(o)
}

// Search checks a Search call: an open store, then CheckSearch, whose
// resolved search it returns.
func (g *Guard) Search(ctx context.Context, o longterm.Options, so longterm.SearchOptions) (Search, error) {
	if err := g.Check(); err != nil {
		return Search{}, err
	}
	return CheckSearch(ctx, o, so)
}
