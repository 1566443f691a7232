package bench

import (
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/mongodb"
)

// mongoFloor inserts into collections of its own in the store's database.
type mongoFloor struct {
	db *mongo.Database
	ns string
	n  int64
}

func openMongo(ctx context.Context, b *backend, raw string, opts cairn.StoreOptions) error {
	client, err := mongo.Connect(options.Client().ApplyURI(raw))
	if err != nil {
		return err
	}
	db := client.Database(mongoDatabase(raw))
	s, err := mongodb.New(ctx, db, opts)
	if err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return err
	}
	b.store = s
	f := &mongoFloor{db: db, ns: opts.Namespace}
	b.floorName, b.floor = "InsertOne of 1 KB", f
	b.atomicName, b.atomic = "InsertOne of 1 KB, then a compare-and-set UpdateOne of a counter document", &mongoCASFloor{f: f}
	b.size = func(ctx context.Context, _ []string) (int64, bool, error) {
		var n int64
		for _, c := range []string{opts.Namespace + ".sessions", opts.Namespace + ".events", opts.Namespace + ".snapshots"} {
			var st struct {
				Size int64 `bson:"size"`
			}
			if err := db.RunCommand(ctx, bson.D{{Key: "collStats", Value: c}}).Decode(&st); err != nil {
				return 0, false, nil // the server does not tell
			}
			n += st.Size
		}
		return n, true, nil
	}
	b.close = func() { _ = client.Disconnect(context.WithoutCancel(ctx)) }
	return nil
}

// mongoDatabase returns the database a URI names, "cairn" when none.
func mongoDatabase(raw string) string {
	_, rest, _ := strings.Cut(raw, "://")
	_, path, ok := strings.Cut(rest, "/")
	if !ok {
		return "cairn"
	}
	path, _, _ = strings.Cut(path, "?")
	if path == "" {
		return "cairn"
	}
	return path
}

func (f *mongoFloor) coll(name string) *mongo.Collection { return f.db.Collection(f.ns + "." + name) }

func (f *mongoFloor) write(ctx context.Context, body []byte) error {
	f.n++
	_, err := f.coll("floor").InsertOne(ctx, bson.D{{Key: "_id", Value: f.n}, {Key: "body", Value: string(body)}})
	return err
}

// mongoCASFloor is the least compare-and-append MongoDB can do without a
// transaction: an insert under a unique key, then a compare-and-set of the
// document that says how far the log goes (two round trips).
type mongoCASFloor struct {
	f *mongoFloor
	n int64
}

func (c *mongoCASFloor) write(ctx context.Context, body []byte) error {
	c.n++
	if _, err := c.f.coll("floor_cas").InsertOne(ctx, bson.D{{Key: "_id", Value: c.n}, {Key: "body", Value: string(body)}}); err != nil {
		return err
	}
	res, err := c.f.coll("floor_head").UpdateOne(ctx,
		bson.D{{Key: "_id", Value: "head"}, {Key: "last", Value: c.n - 1}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "last", Value: c.n}}}}, options.UpdateOne().SetUpsert(c.n == 1))
	if err == nil && res.MatchedCount+res.UpsertedCount != 1 {
		err = fmt.Errorf("the head document is not at %d", c.n-1)
	}
	return err
}

func (f *mongoFloor) put(ctx context.Context, name string, rows [][]byte) error {
	docs := make([]any, len(rows))
	for i, r := range rows {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "body", Value: string(r)}}
	}
	for i := 0; i < len(docs); i += 500 {
		if _, err := f.coll("rows_"+name).InsertMany(ctx, docs[i:min(i+500, len(docs))]); err != nil {
			return err
		}
	}
	return nil
}

func (f *mongoFloor) get(ctx context.Context, name string) ([][]byte, error) {
	cur, err := f.coll("rows_"+name).Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	var out [][]byte
	for cur.Next(ctx) {
		var d struct {
			Body string `bson:"body"`
		}
		if err := cur.Decode(&d); err != nil {
			return nil, err
		}
		out = append(out, []byte(d.Body))
	}
	return out, cur.Err()
}

// close drops the namespace's collections, the store's with the floor's.
func (f *mongoFloor) close(ctx context.Context) error {
	names, err := f.db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return err
	}
	for _, n := range names {
		if strings.HasPrefix(n, f.ns+".") {
			if err := f.db.Collection(n).Drop(ctx); err != nil {
				return fmt.Errorf("drop %s: %w", n, err)
			}
		}
	}
	return nil
}
