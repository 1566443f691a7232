package mongodb

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn/internal/unixnano"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// noVector leaves the vector out of a read.
var noVector = bson.D{{Key: "vec", Value: 0}, {Key: "toks", Value: 0}}

// Get implements longterm.Store.
func (s *LongTerm) Get(ctx context.Context, namespace, key string) (*longterm.Item, error) {
	if err := s.guard.Key(namespace, key); err != nil {
		return nil, err
	}
	var d ltDoc
	// By _id alone, expiry checked here: FerretDB reads a document by _id
	// through its index, and the collection for any other filter.
	err := s.items.FindOne(ctx, bson.D{{Key: "_id", Value: ltID(namespace, key)}},
		options.FindOne().SetProjection(bson.D{{Key: "toks", Value: 0}})).Decode(&d)
	if err == nil && ltdriver.Expired(unixnano.Time(d.Expires), ltdriver.Now(s.opts)) {
		err = mongo.ErrNoDocuments
	}
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, ltdriver.NotFound(namespace, key)
	}
	if err != nil {
		return nil, s.fail("get "+namespace+" "+key, err)
	}
	it, err := d.item(true)
	if err != nil {
		return nil, s.fail("get "+namespace+" "+key, err)
	}
	return &it, nil
}

// List implements longterm.Store: the (path, key) index from the cursor
// on.
func (s *LongTerm) List(ctx context.Context, opts longterm.ListOptions) (*longterm.ListPage, error) {
	opts, cur, err := s.guard.List(opts)
	if err != nil {
		return nil, err
	}
	f := ltFilter(unixnano.Of(ltdriver.Now(s.opts)), opts.Prefix, opts.Labels)
	if !cur.IsZero() {
		p := longterm.PathOrder(cur.Namespace)
		f = append(f, bson.E{Key: "$and", Value: bson.A{bson.D{{Key: "$or", Value: bson.A{
			bson.D{{Key: "path", Value: bson.D{{Key: "$gt", Value: p}}}},
			bson.D{{Key: "path", Value: p}, {Key: "key", Value: bson.D{{Key: "$gt", Value: cur.Key}}}},
		}}}}})
	}
	proj := noVector
	if opts.Vectors {
		proj = bson.D{{Key: "toks", Value: 0}}
	}
	c, err := s.items.Find(ctx, f, options.Find().SetSort(bson.D{{Key: "path", Value: 1}, {Key: "key", Value: 1}}).
		SetLimit(int64(opts.Limit+1)).SetProjection(proj))
	if err != nil {
		return nil, s.fail("list", err)
	}
	var docs []ltDoc
	if err := c.All(ctx, &docs); err != nil {
		return nil, s.fail("list", err)
	}
	var items []longterm.Item
	for i := range docs {
		it, err := docs[i].item(opts.Vectors)
		if err != nil {
			return nil, s.fail("list", err)
		}
		items = append(items, it)
	}
	return ltdriver.Page(items, opts.Limit), nil
}

// Namespaces implements longterm.Store by skipping through the (path,
// key) index: one query per namespace listed, and, with a depth, one per
// namespace cut.
func (s *LongTerm) Namespaces(ctx context.Context, opts longterm.NamespaceOptions) (*longterm.NamespacePage, error) {
	opts, err := s.guard.Namespaces(opts)
	if err != nil {
		return nil, err
	}
	now := unixnano.Of(ltdriver.Now(s.opts))
	return ltdriver.SkipNamespaces(opts, func(pos, hi string, inclusive bool) (string, bool, error) {
		op := "$gt"
		if inclusive {
			op = "$gte"
		}
		var d ltDoc
		err := s.items.FindOne(ctx, bson.D{{Key: "path", Value: bson.D{{Key: op, Value: pos}, {Key: "$lt", Value: hi}}}, ltLive(now)},
			options.FindOne().SetSort(bson.D{{Key: "path", Value: 1}}).SetProjection(bson.D{{Key: "ns", Value: 1}})).Decode(&d)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return "", false, nil
		}
		if err != nil {
			return "", false, s.fail("namespaces", err)
		}
		return d.Namespace, true, nil
	})
}

// Search implements longterm.Store. The text side finds the documents
// that hold every token hash of one of the query's phrases (the multikey
// index on toks), counts each phrase in their texts and scores BM25 over
// the memory's statistics, as the memory backend does, then filters. The
// vector side reads the vectors of the filtered items of the search's
// model and length and computes cosine. The results are the documents
// those reads returned: one query per side, none more.
func (s *LongTerm) Search(ctx context.Context, opts longterm.SearchOptions) ([]longterm.Result, error) {
	q, err := s.guard.Search(ctx, s.opts, opts)
	if err != nil {
		return nil, err
	}
	ranked, err := ltdriver.Find(ctx, q, s.textHits, s.vectorHits)
	if err != nil {
		return nil, s.fail("search", err)
	}
	if len(ranked) == 0 {
		return nil, nil
	}
	out := make([]longterm.Result, 0, len(ranked))
	for _, r := range ranked {
		it, err := r.Ref.(*ltDoc).item(false)
		if err != nil {
			return nil, s.fail("search", err)
		}
		out = append(out, r.Result(it))
	}
	return out, nil
}

// textHits returns the best q.Candidates items by BM25.
func (s *LongTerm) textHits(ctx context.Context, q ltdriver.Search) ([]ltdriver.Hit, error) {
	// One query per phrase, on one of its tokens (the longest, likely
	// the rarest): FerretDB reads an equality on the multikey index, and
	// reads the whole collection for $all or $or. The phrase itself is
	// checked on the texts below.
	var docs []*ltDoc
	seen := map[string]bool{}
	for _, ph := range q.Phrases {
		tok := ph[0]
		for _, t := range ph[1:] {
			if len(t) > len(tok) {
				tok = t
			}
		}
		c, err := s.items.Find(ctx, bson.D{{Key: "toks", Value: TokenHash(tok)}}, options.Find().SetProjection(noVector))
		if err != nil {
			return nil, err
		}
		var found []*ltDoc
		if err := c.All(ctx, &found); err != nil {
			return nil, err
		}
		for _, d := range found {
			if !seen[d.ID] {
				seen[d.ID] = true
				docs = append(docs, d)
			}
		}
	}
	if len(docs) == 0 {
		return nil, nil
	}
	var st struct {
		N   float64 `bson:"n"`
		Len float64 `bson:"len"`
	}
	if err := s.meta.FindOne(ctx, bson.D{{Key: "_id", Value: "stats"}}).Decode(&st); err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return nil, err
	}
	n := max(st.N, float64(len(docs)), 1)
	avg := max(st.Len/n, 1e-9)
	toks := make([][]string, len(docs))
	lengths := make([]float64, len(docs))
	for i, d := range docs {
		toks[i], lengths[i] = longterm.Tokens(d.Text), float64(d.Len)
	}
	scores := ltdriver.ScoreTokens(q.Phrases, toks, lengths, n, avg)
	now := ltdriver.Now(s.opts)
	top := ltdriver.NewTopHits(q.Candidates, false)
	for i, d := range docs {
		if scores[i] <= 0 || !longterm.InPrefix(q.Prefix, d.Namespace) || ltdriver.Expired(unixnano.Time(d.Expires), now) {
			continue
		}
		if len(q.Labels) > 0 {
			it, err := d.item(false)
			if err != nil {
				return nil, err
			}
			if !ltdriver.MatchLabels(q.Labels, it.Labels) {
				continue
			}
		}
		top.Offer(ltdriver.Hit{Namespace: d.Namespace, Key: d.Key, Text: scores[i], Ref: d})
	}
	return top.Hits(), nil
}

// vectorHits returns the best q.Candidates items by cosine similarity,
// over every filtered item with a vector of the search's model and
// length.
func (s *LongTerm) vectorHits(ctx context.Context, q ltdriver.Search) ([]ltdriver.Hit, error) {
	f := ltFilter(unixnano.Of(ltdriver.Now(s.opts)), q.Prefix, q.Labels)
	f = append(f, bson.E{Key: "model", Value: q.Model}, bson.E{Key: "dims", Value: len(q.Vector)})
	c, err := s.items.Find(ctx, f, options.Find().SetProjection(bson.D{{Key: "toks", Value: 0}}))
	if err != nil {
		return nil, err
	}
	defer c.Close(ctx)
	top := ltdriver.NewTopHits(q.Candidates, true)
	for c.Next(ctx) {
		var d ltDoc
		if err := c.Decode(&d); err != nil {
			return nil, err
		}
		top.Offer(ltdriver.Hit{Namespace: d.Namespace, Key: d.Key, Vector: ltdriver.CosineEncoded(q.Vector, d.Vector), Ref: &d})
	}
	return top.Hits(), c.Err()
}
