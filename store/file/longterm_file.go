//go:build linux || darwin

package file

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// Names in the long-term memory's folder (DIR/.longterm).
const (
	ltFolder     = ".longterm"   // in the store's folder; no session namespace starts with a dot
	ltLock       = "lock"        // what flock serialises writers on
	ltRevision   = "revision"    // the last version given, in decimal
	ltItems      = "items.jsonl" // a namespace's items; no segment holds a dot
	ltTree       = "ns"          // the namespaces' folders
	ltFormat     = 1             // the version of the items file's header
	ltHeaderSize = 4096          // a header is read in one read of this size
)

// ltHeader is the first line of an items file. Generation is new with
// every file written whole; appends keep it. A file's generation and size
// say whether a reader's copy of it is current.
type ltHeader struct {
	Format     int    `json:"cairn_longterm"`
	Generation string `json:"generation"`
}

// ltLine is one item of an items file, one JSON line. The namespace is
// the folder's.
type ltLine struct {
	Key         string            `json:"key"`
	Value       json.RawMessage   `json:"value"`
	Text        string            `json:"text,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Vector      []byte            `json:"vector,omitempty"` // ltdriver.EncodeVector's bytes, in base64
	VectorModel string            `json:"vector_model,omitempty"`
	Source      longterm.Source   `json:"source,omitzero"`
	Version     int64             `json:"version"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
	ExpiresAt   time.Time         `json:"expires_at,omitzero"`
}

func toLine(it *longterm.Item) ltLine {
	return ltLine{Key: it.Key, Value: it.Value, Text: it.Text, Labels: it.Labels, Vector: ltdriver.EncodeVector(it.Vector),
		VectorModel: it.VectorModel, Source: it.Source, Version: it.Version, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, ExpiresAt: it.ExpiresAt}
}

func (l *ltLine) item(ns string) (*longterm.Item, error) {
	v, err := ltdriver.DecodeVector(l.Vector)
	if err != nil {
		return nil, err
	}
	return &longterm.Item{Namespace: ns, Key: l.Key, Value: l.Value, Text: l.Text, Labels: l.Labels, Vector: v,
		VectorModel: l.VectorModel, Source: l.Source, Version: l.Version, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt, ExpiresAt: l.ExpiresAt}, nil
}

// encodeLine returns an item's line, with its newline.
func encodeLine(it *longterm.Item) ([]byte, error) {
	b, err := json.Marshal(toLine(it))
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// nsFile is a namespace's items file as read: its items by key, a text
// index over them (by key), the highest version it holds, and what says
// whether it is still the file on disk. It is never changed once read,
// so that readers share it without a lock.
type nsFile struct {
	ns         string
	generation string
	fileSize   int64 // the file's size when read
	torn       bool  // its end is a line cut short by a crash
	items      map[string]*longterm.Item
	index      *ltdriver.Index
	maxVersion int64
}

// itemsPath returns the items file of namespace ns, relative to the
// long-term folder; nsDir its folder.
func itemsPath(ns string) string { return path.Join(ltTree, ns, ltItems) }
func nsDir(ns string) string     { return path.Join(ltTree, ns) }

// readNS returns namespace ns's items file, from the cache when its
// generation and size are those on disk; nil when the namespace has no
// file.
func (s *LongTerm) readNS(ns string) (*nsFile, error) {
	f, err := s.root.Open(itemsPath(ns))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	head := make([]byte, min(ltHeaderSize, fi.Size()))
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, err
	}
	i := bytes.IndexByte(head, '\n')
	var h ltHeader
	if i < 0 || json.Unmarshal(head[:i], &h) != nil || h.Format != ltFormat || h.Generation == "" {
		return nil, fmt.Errorf("%w: %s: the first line is not a long-term memory header", cairn.ErrDamaged, itemsPath(ns))
	}
	s.cacheMu.Lock()
	c := s.cache[ns]
	s.cacheMu.Unlock()
	// A writer appends whole lines to a file it reads whole, and writes a
	// new file (a new generation) for anything else, cutting off a line
	// a crash cut short: the generation and the size name the contents.
	if c != nil && c.generation == h.Generation && c.fileSize == fi.Size() {
		return c, nil
	}
	rest, err := io.ReadAll(io.LimitReader(f, fi.Size()-int64(len(head))))
	if err != nil {
		return nil, err
	}
	d, err := parseNS(ns, h.Generation, append(head, rest...))
	if err != nil {
		return nil, err
	}
	s.remember(d)
	return d, nil
}

// parseNS reads an items file's bytes.
func parseNS(ns, generation string, b []byte) (*nsFile, error) {
	d := &nsFile{ns: ns, generation: generation, items: map[string]*longterm.Item{}, index: ltdriver.NewIndex()}
	end := bytes.LastIndexByte(b, '\n') + 1
	d.fileSize, d.torn = int64(len(b)), end < len(b)
	sc := bufio.NewScanner(bytes.NewReader(b[:end]))
	sc.Buffer(nil, 64<<20)
	for n := 0; sc.Scan(); n++ {
		if n == 0 {
			continue // the header
		}
		var l ltLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %v", cairn.ErrDamaged, itemsPath(ns), n+1, err)
		}
		it, err := l.item(ns)
		if err != nil || longterm.ValidateKey(l.Key) != nil || l.Version <= 0 {
			return nil, fmt.Errorf("%w: %s line %d: not an item (key %q, version %d, %v)", cairn.ErrDamaged, itemsPath(ns), n+1, l.Key, l.Version, err)
		}
		if _, dup := d.items[l.Key]; dup {
			return nil, fmt.Errorf("%w: %s line %d: key %q is there twice", cairn.ErrDamaged, itemsPath(ns), n+1, l.Key)
		}
		d.items[l.Key] = it
		d.index.Set(l.Key, ns, it.Text)
		d.maxVersion = max(d.maxVersion, l.Version)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", cairn.ErrDamaged, itemsPath(ns), err)
	}
	return d, nil
}

// maxCachedNS bounds the namespaces whose files a LongTerm keeps read.
const maxCachedNS = 4096

func (s *LongTerm) remember(d *nsFile) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if len(s.cache) >= maxCachedNS {
		clear(s.cache)
	}
	s.cache[d.ns] = d
}

func (s *LongTerm) forget(ns string) {
	s.cacheMu.Lock()
	delete(s.cache, ns)
	s.cacheMu.Unlock()
}

// namespaces returns the namespaces under prefix that have an items file,
// in path order, walking their folders.
func (s *LongTerm) namespaces(prefix string) ([]string, error) {
	var out []string
	var walk func(ns string) error
	walk = func(ns string) error {
		dir := ltTree
		if ns != "" {
			dir = nsDir(ns)
		}
		f, err := s.root.Open(dir)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) {
			return nil
		}
		if err != nil {
			return err
		}
		entries, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return err
		}
		for _, e := range entries {
			switch {
			case e.Name() == ltItems && e.Type().IsRegular() && ns != "":
				out = append(out, ns)
			case e.IsDir() && longterm.ValidateNamespace(e.Name()) == nil && !strings.Contains(e.Name(), "/"):
				child := e.Name()
				if ns != "" {
					child = ns + "/" + child
				}
				if err := walk(child); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(prefix); err != nil {
		return nil, err
	}
	slices.SortFunc(out, longterm.ComparePaths)
	return out, nil
}

// newGeneration returns a fresh generation for a file written whole.
func newGeneration() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writeNS writes namespace ns's items file whole, holding items, under a
// temporary name renamed into place, each step made durable: readers see
// the old file or the new one. With no item, it removes the file and the
// folders left empty. The writer's lock is held.
func (s *LongTerm) writeNS(ns string, items []*longterm.Item) error {
	s.forget(ns)
	if err := s.dropStale(ns); err != nil {
		return err
	}
	if len(items) == 0 {
		if err := s.root.Remove(itemsPath(ns)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return s.pruneFolders(ns)
	}
	slices.SortFunc(items, func(a, b *longterm.Item) int { return strings.Compare(a.Key, b.Key) })
	var buf bytes.Buffer
	h, _ := json.Marshal(ltHeader{Format: ltFormat, Generation: newGeneration()})
	buf.Write(append(h, '\n'))
	for _, it := range items {
		b, err := encodeLine(it)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	if err := s.mkdirs(ns); err != nil {
		return err
	}
	tmp := path.Join(nsDir(ns), ".tmp-"+newGeneration())
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err == nil {
		err = s.root.Rename(tmp, itemsPath(ns))
	}
	if err != nil {
		_ = s.root.Remove(tmp)
		return err
	}
	return s.syncDir(nsDir(ns))
}

// appendNS appends one item's line to namespace ns's items file, which
// holds no line of its key, and makes it durable. The writer's lock is
// held, and the file has no torn tail.
func (s *LongTerm) appendNS(ns string, it *longterm.Item) error {
	if err := s.dropStale(ns); err != nil {
		return err
	}
	b, err := encodeLine(it)
	if err != nil {
		return err
	}
	f, err := s.root.OpenFile(itemsPath(ns), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// dropStale removes the temporary files left in namespace ns's folder by
// a writer that died before its rename: the writer's lock is held, so no
// living writer owns one, and one may hold items since erased.
func (s *LongTerm) dropStale(ns string) error {
	d, err := s.root.Open(nsDir(ns))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		if strings.HasPrefix(n, ".tmp-") {
			if err := s.root.Remove(path.Join(nsDir(ns), n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// mkdirs makes namespace ns's folders, making durable each folder entry it
// adds.
func (s *LongTerm) mkdirs(ns string) error {
	dir := ltTree
	for _, seg := range strings.Split(ns, "/") {
		child := path.Join(dir, seg)
		err := s.root.Mkdir(child, 0o700)
		if err == nil {
			err = s.syncDir(dir)
		} else if errors.Is(err, fs.ErrExist) {
			err = nil
		}
		if err != nil {
			return err
		}
		dir = child
	}
	return nil
}

// pruneFolders removes namespace ns's folder and the folders above it
// that are left empty.
func (s *LongTerm) pruneFolders(ns string) error {
	for ns != "" {
		if err := s.root.Remove(nsDir(ns)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return nil // not empty: another namespace lives under it
		}
		parent := ltTree
		if i := strings.LastIndexByte(ns, '/'); i >= 0 {
			ns = ns[:i]
			parent = nsDir(ns)
		} else {
			ns = ""
		}
		if err := s.syncDir(parent); err != nil {
			return err
		}
	}
	return nil
}

// syncDir makes a folder's entries durable.
func (s *LongTerm) syncDir(dir string) error {
	d, err := s.root.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
