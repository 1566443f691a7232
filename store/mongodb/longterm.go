package mongodb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/internal/unixnano"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

func init() {
	ltdriver.RegisterByNamespace(func(ctx context.Context, uri string, opts longterm.Options) (longterm.Store, error) {
		return OpenLongTerm(ctx, uri, LongTermOptions{Options: opts})
	}, "mongodb", "mongodb+srv")
}

// LongTermOptions configure OpenLongTerm and NewLongTerm: Namespace is the
// session namespace whose collections' prefix the memory shares (cairn.DefaultNamespace
// when empty).
type LongTermOptions struct {
	longterm.Options
}

// LongTerm is a longterm.Store on MongoDB or a server of its wire
// protocol (FerretDB), in the collection NAMESPACE.longterm, one document
// per item, with a text index of its own: it needs neither a text index
// (FerretDB has none) nor transactions.
//
// Each item's document holds the SHA-256 hashes of its text's tokens (a
// multikey index on them finds the items a word names) and its vector.
// Search scores BM25 over the items the query's phrases name, as the
// memory backend does, with the item count and total text length kept in
// NAMESPACE.longterm_meta; it computes cosine over the vectors of the
// filtered items. A Put is a compare-and-set on the item's document (its
// version), so writers racing on one item never overwrite each other; the
// statistics are updated after it, so a crash between the two leaves them
// off by one item, which moves scores, never results. Deleting an item or
// a namespace deletes its documents, and with them its index entries and
// vector.
type LongTerm struct {
	client *mongo.Client // disconnected by Close when OpenLongTerm made it
	items  *mongo.Collection
	meta   *mongo.Collection
	opts   longterm.Options
	guard  ltdriver.Guard
}

var (
	_ longterm.Store   = (*LongTerm)(nil)
	_ longterm.Sweeper = (*LongTerm)(nil)
)

// OpenLongTerm connects to the server a MongoDB URI names and returns the
// long-term memory in the URI's database ("cairn" when it has no path).
// Close disconnects.
func OpenLongTerm(ctx context.Context, uri string, opts LongTermOptions) (*LongTerm, error) {
	client, db, err := connect(uri)
	if err != nil {
		return nil, err
	}
	s, err := NewLongTerm(ctx, db, opts)
	if err != nil {
		_ = disconnect(ctx, client)
		if errors.Is(err, cairn.ErrInvalidID) {
			return nil, err
		}
		unavailable(&err)
		return nil, fmt.Errorf("open mongodb %s: %w (is the server running and reachable?)", text.RedactURL(uri), err)
	}
	s.client = client
	return s, nil
}

// NewLongTerm returns the long-term memory in db, whose client the caller
// keeps. It creates the collections' indexes if they are missing.
func NewLongTerm(ctx context.Context, db *mongo.Database, opts LongTermOptions) (*LongTerm, error) {
	ns, err := ltdriver.SessionNamespace(opts.Options)
	if err != nil {
		return nil, err
	}
	s := &LongTerm{items: db.Collection(ns + ".longterm"), meta: db.Collection(ns + ".longterm_meta"), opts: opts.Options.WithDefaults()}
	for _, m := range []mongo.IndexModel{
		{Keys: bson.D{{Key: "path", Value: 1}, {Key: "key", Value: 1}}, Options: options.Index().SetName("path_key").SetUnique(true)},
		{Keys: bson.D{{Key: "toks", Value: 1}}, Options: options.Index().SetName("toks")},
		{Keys: bson.D{{Key: "ea", Value: 1}}, Options: options.Index().SetName("ea")},
	} {
		if _, err := s.items.Indexes().CreateOne(ctx, m); err != nil {
			return nil, fmt.Errorf("create index on %s: %w", s.items.Name(), err)
		}
	}
	return s, nil
}

// Collections returns the names of the items' collection and of the
// statistics'.
func (s *LongTerm) Collections() (items, meta string) { return s.items.Name(), s.meta.Name() }

// Close implements longterm.Store: it disconnects if OpenLongTerm made
// the client.
func (s *LongTerm) Close() error {
	if !s.guard.Close() || s.client == nil {
		return nil
	}
	if err := disconnect(context.Background(), s.client); err != nil {
		return fmt.Errorf("close mongodb memory store: %w", err)
	}
	return nil
}

func (s *LongTerm) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, longterm.ErrNotFound) || errors.Is(err, longterm.ErrConflict) {
		return err
	}
	if s.guard.Closed() {
		err = cairn.ErrClosed
	}
	unavailable(&err)
	return fmt.Errorf("%s: %w", op, err)
}

// ltDoc is an item's document.
type ltDoc struct {
	ID        string   `bson:"_id"`
	Namespace string   `bson:"ns"`
	Path      string   `bson:"path"`
	Key       string   `bson:"key"`
	Value     string   `bson:"value"`
	Text      string   `bson:"text"`
	Labels    []string `bson:"labels"` // each a JSON array [key, value]
	Toks      []string `bson:"toks"`   // the distinct hashes of the text's tokens
	Len       int      `bson:"len"`    // the text's length for BM25
	Vector    []byte   `bson:"vec,omitempty"`
	Model     string   `bson:"model"`
	Dims      int      `bson:"dims"`
	Session   string   `bson:"ss"`
	Seq       int64    `bson:"sq"`
	Version   int64    `bson:"ver"`
	Created   int64    `bson:"ca"`
	Updated   int64    `bson:"ua"`
	Expires   int64    `bson:"ea"` // 0: never
}

func (d *ltDoc) item(vector bool) (longterm.Item, error) {
	it := longterm.Item{Namespace: d.Namespace, Key: d.Key, Value: json.RawMessage(d.Value), Text: d.Text,
		VectorModel: d.Model, Source: longterm.Source{Session: d.Session, Seq: d.Seq}, Version: d.Version,
		CreatedAt: unixnano.Time(d.Created), UpdatedAt: unixnano.Time(d.Updated), ExpiresAt: unixnano.Time(d.Expires)}
	for _, l := range d.Labels {
		var kv [2]string
		if err := json.Unmarshal([]byte(l), &kv); err != nil {
			return it, fmt.Errorf("item %s %s: label %q: %w", d.Namespace, d.Key, l, err)
		}
		if it.Labels == nil {
			it.Labels = map[string]string{}
		}
		it.Labels[kv[0]] = kv[1]
	}
	if vector {
		v, err := ltdriver.DecodeVector(d.Vector)
		if err != nil {
			return it, fmt.Errorf("item %s %s: %w", d.Namespace, d.Key, err)
		}
		it.Vector = v
	}
	return it, nil
}

// ltID is an item's _id: 32 hex digits of a SHA-256 of its namespace and
// key (a key may hold any character; the _id holds none of it).
func ltID(ns, key string) string {
	sum := sha256.Sum256([]byte(ns + "\x00" + key))
	return hex.EncodeToString(sum[:16])
}

// TokenHash names a token in the index: 16 hex digits of its SHA-256.
func TokenHash(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:8])
}

// labelTerms are labels as the documents hold them.
func labelTerms(l map[string]string) []string {
	out := make([]string, 0, len(l))
	for k, v := range l {
		b, _ := json.Marshal([2]string{k, v})
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// live is the filter of the items that have not expired at now.
func ltLive(now int64) bson.E {
	return bson.E{Key: "$or", Value: bson.A{bson.D{{Key: "ea", Value: int64(0)}}, bson.D{{Key: "ea", Value: bson.D{{Key: "$gt", Value: now}}}}}}
}

// ltFilter is the filter of the live items under prefix with labels.
func ltFilter(now int64, prefix string, labels map[string]string) bson.D {
	f := bson.D{ltLive(now)}
	if prefix != "" {
		lo, hi := longterm.PrefixRange(prefix)
		f = append(f, bson.E{Key: "path", Value: bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: hi}}})
	}
	if len(labels) > 0 {
		f = append(f, bson.E{Key: "labels", Value: bson.D{{Key: "$all", Value: labelTerms(labels)}}})
	}
	return f
}

// adjust adds to the statistics BM25 reads: the item count and the total
// length of their texts.
func (s *LongTerm) adjust(ctx context.Context, n, length int) error {
	if n == 0 && length == 0 {
		return nil
	}
	for {
		_, err := s.meta.UpdateOne(ctx, bson.D{{Key: "_id", Value: "stats"}},
			bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: n}, {Key: "len", Value: length}}}}, options.UpdateOne().SetUpsert(true))
		if !mongo.IsDuplicateKeyError(err) { // two first upserts raced: the document exists now
			return err
		}
	}
}

// nextVersion takes the next value of the version counter.
func (s *LongTerm) nextVersion(ctx context.Context) (int64, error) {
	for {
		var rev struct {
			N int64 `bson:"n"`
		}
		err := s.meta.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: "rev"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int64(1)}}}},
			options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&rev)
		if !mongo.IsDuplicateKeyError(err) { // two first upserts raced: the document exists now
			return rev.N, err
		}
	}
}

// claim makes this writer the only one to change the item id from
// version ver: it inserts the document "claim:ID@VER", which a unique _id
// lets only one writer insert. (A filter on the version alone is not
// enough: FerretDB matches and replaces in two steps, so two writers
// could both replace the version they read.) It reports false when
// another writer holds the claim; a claim left StaleAfter ago by a
// writer that died is taken over. release removes it once the item has
// moved on, or the writer gave up.
func (s *LongTerm) claim(ctx context.Context, id string, ver int64) (ok bool, release func(), err error) {
	cid := fmt.Sprintf("claim:%s@%d", id, ver)
	at := time.Now().UnixNano() // the real clock: a claim's age is not the store's clock's business
	_, err = s.meta.InsertOne(ctx, bson.D{{Key: "_id", Value: cid}, {Key: "at", Value: at}})
	release = func() {
		_, _ = s.meta.DeleteOne(context.WithoutCancel(ctx), bson.D{{Key: "_id", Value: cid}, {Key: "at", Value: at}})
	}
	if err == nil {
		return true, release, nil
	}
	if !mongo.IsDuplicateKeyError(err) {
		return false, nil, err
	}
	var held struct {
		At int64 `bson:"at"`
	}
	if err := s.meta.FindOne(ctx, bson.D{{Key: "_id", Value: cid}}).Decode(&held); err == nil && time.Now().UnixNano()-held.At > int64(StaleAfter) {
		_, _ = s.meta.DeleteOne(ctx, bson.D{{Key: "_id", Value: cid}, {Key: "at", Value: held.At}})
	}
	// Let the holder finish before reading the item again.
	select {
	case <-ctx.Done():
		return false, nil, ctx.Err()
	case <-time.After(time.Millisecond):
	}
	return false, nil, nil
}

// Put implements longterm.Store: read the item's document, claim its
// version (claim), take the next version (an $inc on a counter), then
// insert the document, or replace it if it is still at the version read;
// another writer between the two makes it start again, and so of writers
// racing with one expected version exactly one wins.
func (s *LongTerm) Put(ctx context.Context, item longterm.Item, opts longterm.PutOptions) (*longterm.Item, error) {
	item, err := s.guard.Put(ctx, s.opts, item, opts)
	if err != nil {
		return nil, err
	}
	now := ltdriver.Now(s.opts)
	toks := longterm.Tokens(item.Text)
	var hashes []string
	for _, t := range toks {
		hashes = append(hashes, TokenHash(t))
	}
	slices.Sort(hashes)
	hashes = slices.Compact(hashes)
	id := ltID(item.Namespace, item.Key)
	op := "put " + item.Namespace + " " + item.Key
	for {
		var old ltDoc
		err := s.items.FindOne(ctx, bson.D{{Key: "_id", Value: id}},
			options.FindOne().SetProjection(bson.D{{Key: "ver", Value: 1}, {Key: "ca", Value: 1}, {Key: "ea", Value: 1}, {Key: "len", Value: 1}})).Decode(&old)
		exists := err == nil
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return nil, s.fail(op, err)
		}
		var prev *longterm.Item
		var current int64
		if exists && !ltdriver.Expired(unixnano.Time(old.Expires), now) {
			prev, current = &longterm.Item{CreatedAt: unixnano.Time(old.Created)}, old.Version
		}
		if err := ltdriver.Admit(item.Namespace, item.Key, current, opts.IfVersion); err != nil {
			return nil, err
		}
		release := func() {}
		if exists {
			ok, rel, err := s.claim(ctx, id, old.Version)
			if err != nil {
				return nil, s.fail(op, err)
			}
			if !ok {
				continue
			}
			release = rel
		}
		rev, err := s.nextVersion(ctx)
		if err != nil {
			release()
			return nil, s.fail(op, err)
		}
		rev = max(rev, old.Version+1)
		stamped := item
		ltdriver.Stamp(&stamped, prev, rev, now, opts.TTL)
		doc := ltDoc{ID: id, Namespace: item.Namespace, Path: longterm.PathOrder(item.Namespace), Key: item.Key,
			Value: string(item.Value), Text: item.Text, Labels: labelTerms(item.Labels), Toks: hashes,
			Len: len(toks) + strings.Count(item.Namespace, "/") + 1, Vector: ltdriver.EncodeVector(item.Vector),
			Model: item.VectorModel, Dims: len(item.Vector), Session: item.Source.Session, Seq: item.Source.Seq,
			Version: stamped.Version, Created: unixnano.Of(stamped.CreatedAt), Updated: unixnano.Of(stamped.UpdatedAt), Expires: unixnano.Of(stamped.ExpiresAt)}
		if !exists {
			if _, err := s.items.InsertOne(ctx, doc); err != nil {
				if mongo.IsDuplicateKeyError(err) {
					continue // another writer created it: read again
				}
				return nil, s.fail(op, err)
			}
			if err := s.adjust(ctx, 1, doc.Len); err != nil {
				return nil, s.fail(op, err)
			}
			return &stamped, nil
		}
		// Holding the claim on the version read, this writer alone may
		// change the item from it: if the item is still at that version,
		// it stays there until the replace. (Filters by _id alone: FerretDB
		// finds a document by _id through its index, by other fields by
		// reading the collection.)
		still, err := s.atVersion(ctx, id, old.Version)
		if err != nil || !still {
			release()
			if err != nil {
				return nil, s.fail(op, err)
			}
			continue // another writer changed or deleted it: read again
		}
		res, err := s.items.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, doc)
		release()
		if err != nil {
			return nil, s.fail(op, err)
		}
		if res.MatchedCount == 0 {
			continue
		}
		if err := s.adjust(ctx, 0, doc.Len-old.Len); err != nil {
			return nil, s.fail(op, err)
		}
		return &stamped, nil
	}
}

// atVersion reports whether the item id is at version ver.
func (s *LongTerm) atVersion(ctx context.Context, id string, ver int64) (bool, error) {
	var d struct {
		Version int64 `bson:"ver"`
	}
	err := s.items.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, options.FindOne().SetProjection(bson.D{{Key: "ver", Value: 1}})).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	return err == nil && d.Version == ver, err
}

// Delete implements longterm.Store: read the item's version, claim it,
// and delete the document if it is still at that version.
func (s *LongTerm) Delete(ctx context.Context, namespace, key string, ifVersion int64) error {
	if err := s.guard.Delete(namespace, key, ifVersion); err != nil {
		return err
	}
	id := ltID(namespace, key)
	op := "delete " + namespace + " " + key
	now := ltdriver.Now(s.opts)
	for {
		var old ltDoc
		err := s.items.FindOne(ctx, bson.D{{Key: "_id", Value: id}},
			options.FindOne().SetProjection(bson.D{{Key: "ver", Value: 1}, {Key: "ea", Value: 1}, {Key: "len", Value: 1}})).Decode(&old)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return ltdriver.NotFound(namespace, key)
		}
		if err != nil {
			return s.fail(op, err)
		}
		gone := ltdriver.Expired(unixnano.Time(old.Expires), now)
		if !gone {
			if err := ltdriver.Admit(namespace, key, old.Version, ifVersion); err != nil {
				return err
			}
		}
		ok, release, err := s.claim(ctx, id, old.Version)
		if err != nil {
			return s.fail(op, err)
		}
		if !ok {
			continue
		}
		still, err := s.atVersion(ctx, id, old.Version)
		if err != nil || !still {
			release()
			if err != nil {
				return s.fail(op, err)
			}
			continue // changed meanwhile: read again
		}
		res, err := s.items.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
		release()
		if err != nil {
			return s.fail(op, err)
		}
		if res.DeletedCount == 0 {
			continue // changed meanwhile: read again
		}
		if err := s.adjust(ctx, -1, -old.Len); err != nil {
			return s.fail(op, err)
		}
		if gone {
			return ltdriver.NotFound(namespace, key)
		}
		return nil
	}
}

// eraseFound deletes the documents of filter, a batch at a time: it reads
// their _id, expiry and length, deletes them by _id, and returns how many
// were live at now and how many it deleted.
func (s *LongTerm) eraseFound(ctx context.Context, filter bson.D, now int64) (live, erased int, err error) {
	for {
		cur, err := s.items.Find(ctx, filter, options.Find().SetLimit(1000).
			SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "ea", Value: 1}, {Key: "len", Value: 1}}))
		if err != nil {
			return live, erased, err
		}
		var docs []ltDoc
		if err := cur.All(ctx, &docs); err != nil {
			return live, erased, err
		}
		if len(docs) == 0 {
			return live, erased, nil
		}
		ids := make(bson.A, len(docs))
		length := 0
		for i, d := range docs {
			ids[i] = d.ID
			length += d.Len
			if d.Expires == 0 || d.Expires > now {
				live++
			}
		}
		// Still under the filter: a document replaced since it was read
		// (no longer expired, say) stays.
		del := append(slices.Clone(filter), bson.E{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}})
		res, err := s.items.DeleteMany(ctx, del)
		if err != nil {
			return live, erased, err
		}
		erased += int(res.DeletedCount)
		if err := s.adjust(ctx, -int(res.DeletedCount), -length); err != nil {
			return live, erased, err
		}
	}
}

// DeleteNamespace implements longterm.Store: the documents of the
// prefix's range of paths, a batch at a time, until none is left.
func (s *LongTerm) DeleteNamespace(ctx context.Context, prefix string) (int, error) {
	if err := s.guard.DeleteNamespace(prefix); err != nil {
		return 0, err
	}
	lo, hi := longterm.PrefixRange(prefix)
	n, _, err := s.eraseFound(ctx, bson.D{{Key: "path", Value: bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: hi}}}},
		unixnano.Of(ltdriver.Now(s.opts)))
	if err != nil {
		return n, s.fail("delete namespace "+prefix, err)
	}
	return n, nil
}

// Sweep implements longterm.Sweeper through the expiry index.
func (s *LongTerm) Sweep(ctx context.Context) (int, error) {
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	now := unixnano.Of(ltdriver.Now(s.opts))
	_, n, err := s.eraseFound(ctx, bson.D{{Key: "ea", Value: bson.D{{Key: "$gt", Value: int64(0)}, {Key: "$lte", Value: now}}}}, now)
	if err != nil {
		return n, s.fail("sweep", err)
	}
	return n, nil
}
