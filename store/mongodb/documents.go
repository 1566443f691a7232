package mongodb

import (
	"encoding/json"
	"math"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/unixnano"
)

// Special values of a session document's last_seq. A live session has
// last_seq >= 0; the negative states block appends and are invisible to
// readers, and a document left in one for longer than StaleAfter (its
// writer died) may be taken over.
const (
	seqCreating = -1 // Create is clearing old event documents of the ID
	seqErasing  = -2 // Delete or Sweep is removing the events
)

// neverExpires is expires_ns for a session of a store without TTL, so that
// "live" is always expires_ns > now.
const neverExpires = math.MaxInt64

// sessionDoc is a document of the <ns>.sessions collection. Times used for
// order and expiry are kept as Unix nanoseconds so that they round-trip
// exactly; the BSON dates beside them are for people reading the
// collection, and expires_at for a TTL index.
type sessionDoc struct {
	ID           string         `bson:"_id"`
	LastSeq      int64          `bson:"last_seq"`
	CreatedNs    int64          `bson:"created_ns"`
	UpdatedNs    int64          `bson:"updated_ns"`
	ExpiresNs    int64          `bson:"expires_ns"`
	CreatedAt    bson.DateTime  `bson:"created_at"`
	UpdatedAt    bson.DateTime  `bson:"updated_at"`
	ExpiresAt    *bson.DateTime `bson:"expires_at,omitempty"`
	Status       string         `bson:"status"`
	Steps        int64          `bson:"steps"`
	FirstMessage string         `bson:"first_message"`
	Labels       []string       `bson:"labels"` // each a JSON array [key, value]
	Fence        int64          `bson:"fence"`  // appends that began before this (real clock, ns) cannot commit
	BusySince    *bson.DateTime `bson:"busy_since,omitempty"`
	Incarnation  string         `bson:"inc,omitempty"`  // random, new with each Create of the ID
	Born         int64          `bson:"born,omitempty"` // when its Create began (real clock, ns)
}

// info returns the SessionInfo the document holds.
func (d *sessionDoc) info() cairn.SessionInfo {
	return cairn.SessionInfo{
		ID:           d.ID,
		FirstMessage: d.FirstMessage,
		CreatedAt:    time.Unix(0, d.CreatedNs).UTC(),
		UpdatedAt:    time.Unix(0, d.UpdatedNs).UTC(),
		Status:       cairn.Status(d.Status),
		Steps:        int(d.Steps),
		Labels:       decodeLabels(d.Labels),
		LastSeq:      d.LastSeq,
	}
}

// labelPair encodes one label as a JSON array [key, value]: unambiguous
// whatever the key holds (dots and dollars cannot be queried as field
// names), and matchable by equality on the labels array.
func labelPair(k, v string) string {
	b, _ := json.Marshal([2]string{k, v})
	return string(b)
}

func encodeLabels(l map[string]string) []string {
	out := make([]string, 0, len(l))
	for k, v := range l {
		out = append(out, labelPair(k, v))
	}
	slices.Sort(out)
	return out
}

func decodeLabels(pairs []string) map[string]string {
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		var kv [2]string
		if json.Unmarshal([]byte(p), &kv) == nil {
			out[kv[0]] = kv[1]
		}
	}
	return out
}

// eventDoc is a document of the <ns>.events collection: one event, its
// JSON envelope kept as bytes so that a reload gives back what was stored.
// A unique index on (session, seq) lets one writer hold each position.
type eventDoc struct {
	Session   string        `bson:"session"`
	Seq       int64         `bson:"seq"`
	Token     string        `bson:"token"`          // the Append call that wrote it
	WrittenAt bson.DateTime `bson:"written_at"`     // real clock, for the stale rule
	Event     []byte        `bson:"event"`          // the JSON envelope
	Hold      bool          `bson:"hold,omitempty"` // a hold of the position, no event (see hold)

	// The event's entry in the text index (search_index.go): the hashes
	// of its search text's distinct tokens, the counts of those that
	// occur more than once, and the text's length in tokens. Every event
	// document written since the index has tlen, 0 for no text.
	Toks []string         `bson:"toks,omitempty"`
	TF   map[string]int32 `bson:"tf,omitempty"`
	TLen int64            `bson:"tlen"`
}

// liveFilter matches the live session id at now.
func liveFilter(id string, now time.Time) bson.D {
	return append(bson.D{{Key: "_id", Value: id}}, live(now)...)
}

// live matches a live session document at now: committed (last_seq >= 0)
// and not expired.
func live(now time.Time) bson.D {
	return bson.D{
		{Key: "last_seq", Value: bson.D{{Key: "$gte", Value: 0}}},
		{Key: "expires_ns", Value: bson.D{{Key: "$gt", Value: now.UnixNano()}}},
	}
}

// atSeq adds to filter, which may have conditions on last_seq of its own,
// that last_seq is last.
func atSeq(filter bson.D, last int64) bson.D {
	return append(filter[:len(filter):len(filter)], bson.E{Key: "$and", Value: bson.A{bson.D{{Key: "last_seq", Value: last}}}})
}

// expiry returns the expires_ns and expires_at of a session updated at now.
func (s *Store) expiry(now time.Time) (int64, *bson.DateTime) {
	exp := s.opts.ExpiresAt(now)
	if exp.IsZero() {
		return neverExpires, nil
	}
	d := bson.NewDateTimeFromTime(exp)
	return unixnano.Of(exp), &d // held at 2262, where nanoseconds end
}
