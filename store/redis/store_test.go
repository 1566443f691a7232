package redis_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/storetest"
)

func mustCreate(t *testing.T, s cairn.Store, id string) {
	t.Helper()
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatalf("Create(%s): %v", id, err)
	}
}

func mustAppend(t *testing.T, s cairn.Store, id string, expect int64, evs ...cairn.Event) {
	t.Helper()
	if err := s.Append(t.Context(), id, expect, evs...); err != nil {
		t.Fatalf("Append(%s, %d): %v", id, expect, err)
	}
}

// sessionKeys returns the keys of a namespace other than its index, its
// claim set and its side indexes.
func sessionKeys(t *testing.T, ns string) []string {
	t.Helper()
	var out []string
	for _, k := range namespaceKeys(t, t.Context(), ns) {
		if k != "cairn:"+ns+":sessions" && k != "cairn:"+ns+":claimable" && !strings.Contains(k, "{cairn:"+ns+":sessions}") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// ttlSession opens a store with a TTL on a namespace of its own and
// writes session "a" there, a user's turn at seqs 1 to 4; it returns the
// store and its namespace.
func ttlSession(t *testing.T, ttl time.Duration) (*redis.Store, string) {
	t.Helper()
	ns := "t_" + testenv.RandHex(6)
	s := openStore(t, cairn.StoreOptions{Namespace: ns, TTL: ttl})
	mustCreate(t, s, "a")
	mustAppend(t, s, "a", 0, storetest.UserTurn(0, "r", "hello")...)
	return s, ns
}

// TestStore_TTL checks that with a TTL every key of a session, and the
// namespace index, carries a native Redis TTL no longer than the store's,
// and that an append refreshes it.
func TestStore_TTL(t *testing.T) {
	const ttl = time.Hour
	s, ns := ttlSession(t, ttl)
	c := adminClient(t)
	keys := append(sessionKeys(t, ns), "cairn:"+ns+":sessions")
	if len(keys) != 4 {
		t.Fatalf("keys = %v, want the meta, the events, the postings and the index", keys)
	}
	pairs, stats := redis.SearchKeys(s)
	keys = append(keys, redis.SideKeys(s)...)
	keys = append(keys, pairs, stats)
	for _, k := range keys {
		got, err := c.TTL(t.Context(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got <= 0 || got > ttl {
			t.Errorf("TTL of %s = %v, want in (0, %v]", k, got, ttl)
		}
		// Shorten it, so the refresh below is visible.
		if err := c.Expire(t.Context(), k, 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	mustAppend(t, s, "a", 4, storetest.Custom(5, "again"))
	for _, k := range keys {
		got, err := c.TTL(t.Context(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got <= 30*time.Second || got > ttl {
			t.Errorf("TTL of %s after an append = %v, want it refreshed to (30s, %v]", k, got, ttl)
		}
	}
}

// TestStore_TTLRoundsUp checks that a TTL that is not whole seconds
// becomes the next whole second in Redis, never less than asked.
func TestStore_TTLRoundsUp(t *testing.T) {
	ns := "t_" + testenv.RandHex(6)
	s := openStore(t, cairn.StoreOptions{Namespace: ns, TTL: 1500 * time.Millisecond})
	mustCreate(t, s, "a")
	for _, k := range sessionKeys(t, ns) {
		got, err := adminClient(t).PTTL(t.Context(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got <= 1500*time.Millisecond || got > 2*time.Second {
			t.Errorf("PTTL of %s = %v, want in (1.5s, 2s]", k, got)
		}
	}
}

// TestStore_NoTTL checks that an append through a store without a TTL
// makes a session permanent, keys included, as the memory store does.
func TestStore_NoTTL(t *testing.T) {
	ns := "t_" + testenv.RandHex(6)
	clock := storetest.NewClock()
	withTTL := openStore(t, cairn.StoreOptions{Namespace: ns, TTL: time.Hour, Now: clock.Now})
	without := openStore(t, cairn.StoreOptions{Namespace: ns, Now: clock.Now})
	mustCreate(t, withTTL, "a")
	mustAppend(t, without, "a", 0, storetest.Custom(1, "x"))
	for _, k := range append(sessionKeys(t, ns), "cairn:"+ns+":sessions") {
		got, err := adminClient(t).TTL(t.Context(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got >= 0 {
			t.Errorf("TTL of %s = %v, want none", k, got)
		}
	}
	clock.Advance(2 * time.Hour)
	if _, err := withTTL.Load(t.Context(), "a", 0); err != nil {
		t.Errorf("Load after the TTL of a session made permanent: %v", err)
	}
}

// crc16 is the CRC-16/XMODEM that Redis Cluster hashes keys with.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// keySlot computes a key's Cluster slot as Redis does: the hash tag (the
// text between the first "{" and the next "}") if it is not empty, else
// the whole key.
func keySlot(key string) (slot uint16, tag string) {
	tag = key
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			tag = key[i+1 : i+1+j]
		}
	}
	return crc16([]byte(tag)) % 16384, tag
}

func TestKeySlot(t *testing.T) {
	// The check value of CRC-16/XMODEM, given in the Redis Cluster spec.
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	for key, want := range map[string]string{
		"{user1000}.following": "user1000",
		"foo{}{bar}":           "foo{}{bar}",
		"foo{{bar}}zap":        "{bar",
		"foo{bar}{zap}":        "bar",
	} {
		if _, tag := keySlot(key); tag != want {
			t.Errorf("hashed part of %q = %q, want %q", key, tag, want)
		}
	}
}

// TestStore_OneSlot checks that every key of a session hashes to one
// Cluster slot, through a hash tag of the namespace and the ID.
func TestStore_OneSlot(t *testing.T) {
	ns := "t_" + testenv.RandHex(6)
	s := openStore(t, cairn.StoreOptions{Namespace: ns, TTL: time.Hour})
	for _, id := range []string{"a", "session-2", strings.Repeat("Z", 128)} {
		mustCreate(t, s, id)
		mustAppend(t, s, id, 0, storetest.Conversation(0, "r", "hi")...)
		var keys []string
		for _, k := range sessionKeys(t, ns) {
			if strings.Contains(k, ":"+id+"}") {
				keys = append(keys, k)
			}
		}
		if len(keys) != 3 {
			t.Fatalf("session %s has keys %v, want its meta, events and postings", id, keys)
		}
		want := crc16([]byte(ns+":"+id)) % 16384
		for _, k := range keys {
			slot, tag := keySlot(k)
			if tag != ns+":"+id || slot != want {
				t.Errorf("key %s: hash tag %q slot %d, want %q slot %d", k, tag, slot, ns+":"+id, want)
			}
		}
	}
}

// TestStore_DeleteLeavesNothing checks that Delete removes every key and
// the index entry of a session, and nothing of another.
func TestStore_DeleteLeavesNothing(t *testing.T) {
	ns := "t_" + testenv.RandHex(6)
	s := openStore(t, cairn.StoreOptions{Namespace: ns, TTL: time.Hour})
	mustCreate(t, s, "gone")
	mustCreate(t, s, "kept")
	mustAppend(t, s, "gone", 0, storetest.Conversation(0, "r", "secret")...)
	mustAppend(t, s, "kept", 0, storetest.UserTurn(0, "r", "keep")...)
	before := sessionKeys(t, ns)
	if err := s.Delete(t.Context(), "gone"); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, k := range before {
		if !strings.Contains(k, ":gone}") {
			want = append(want, k)
		}
	}
	if got := sessionKeys(t, ns); !slices.Equal(got, want) || len(got) != 3 {
		t.Errorf("keys after Delete = %v, want only kept's %v", got, want)
	}
	members, err := adminClient(t).ZRange(t.Context(), "cairn:"+ns+":sessions", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(members, []string{"kept"}) {
		t.Errorf("index after Delete = %v, want [kept]", members)
	}
	if err := s.Append(t.Context(), "gone", 16, storetest.Custom(17, "late")); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("late Append: got %v, want ErrNotFound", err)
	}
	if got := sessionKeys(t, ns); len(got) != 3 {
		t.Errorf("a late Append left keys behind: %v", got)
	}
}

// TestStore_TwoClientsRace races two stores on two connections at one
// session, round after round: exactly one wins each round.
func TestStore_TwoClientsRace(t *testing.T) {
	const rounds = 20
	ns := "t_" + testenv.RandHex(6)
	a := openStore(t, cairn.StoreOptions{Namespace: ns})
	b := openStore(t, cairn.StoreOptions{Namespace: ns})
	mustCreate(t, a, "race")
	stores := []*redis.Store{a, b}
	for round := range rounds {
		expect := int64(round)
		won, errs := storetest.Race(len(stores), cairn.ErrConflict, func(i int) (int, error) {
			return i, stores[i].Append(t.Context(), "race", expect, storetest.Custom(expect+1, fmt.Sprint(i)))
		})
		if len(errs) > 0 {
			t.Fatalf("round %d: got %v, want nil or ErrConflict", round, errs)
		}
		if len(won) != 1 {
			t.Fatalf("round %d: stores %v won, want exactly 1", round, won)
		}
	}
	rec, err := b.Load(t.Context(), "race", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Events) != rounds || rec.Info.LastSeq != rounds {
		t.Fatalf("got %d events, last seq %d; want %d and %d", len(rec.Events), rec.Info.LastSeq, rounds, rounds)
	}
	for i, e := range rec.Events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

// TestStore_SameBytes checks that an event's data is stored and reloaded
// as given less the white space outside its strings (as
// driver.AppendEnvelope writes it): characters JSON could escape, escapes
// and the spaces inside strings stay as they are.
func TestStore_SameBytes(t *testing.T) {
	ns := "t_" + testenv.RandHex(6)
	s := openStore(t, cairn.StoreOptions{Namespace: ns})
	mustCreate(t, s, "a")
	e := storetest.Custom(1, "x")
	e.Data = json.RawMessage("{ \"type\": \"t.raw\",\n  \"payload\": {\"html\": \"<b>&amp;</b>\", \"u\": \"日本 \\u2713\"} }")
	mustAppend(t, s, "a", 0, e)
	rec, err := s.Load(t.Context(), "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"t.raw","payload":{"html":"<b>&amp;</b>","u":"日本 \u2713"}}`
	if got := rec.Events[0].Data; string(got) != want {
		t.Errorf("reloaded data:\n got %s\nwant %s", got, want)
	}
	raw, err := adminClient(t).LIndex(t.Context(), "cairn:"+ns+":{"+ns+":a}:events", 0).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(raw, `,"data":`+want+`}`) {
		t.Errorf("stored envelope %s does not hold the data %s", raw, want)
	}
}

// TestStore_SnapshotInMeta: a session's snapshot lives in its meta hash, so
// it adds no key, shares the meta's native TTL (which a put does not
// move, and an append does), and goes with the meta.
func TestStore_SnapshotInMeta(t *testing.T) {
	const ttl = time.Hour
	s, ns := ttlSession(t, ttl)
	c := adminClient(t)
	meta := redis.MetaKey(s, "a")
	if err := c.Expire(t.Context(), meta, 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	data := []byte("snapshot \x00\xff bytes")
	if err := s.PutSnapshot(t.Context(), "a", cairn.Snapshot{Seq: 4, Data: data}); err != nil {
		t.Fatal(err)
	}
	if keys := sessionKeys(t, ns); len(keys) != 3 {
		t.Errorf("keys after a put = %v, want the meta, the events and the postings", keys)
	}
	if got, err := c.HGet(t.Context(), meta, "snapshot").Result(); err != nil || got != string(data) {
		t.Errorf("the meta's snapshot field = %q, %v", got, err)
	}
	if got, err := c.TTL(t.Context(), meta).Result(); err != nil || got > 30*time.Second {
		t.Errorf("TTL of the meta after a put = %v, %v; want at most the 30s it had", got, err)
	}
	mustAppend(t, s, "a", 4, storetest.Custom(5, "again"))
	if got, err := c.TTL(t.Context(), meta).Result(); err != nil || got <= 30*time.Second {
		t.Errorf("TTL of the meta after an append = %v, %v; want it refreshed", got, err)
	}
	if err := s.Delete(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if keys := sessionKeys(t, ns); len(keys) != 0 {
		t.Errorf("keys after Delete = %v, want none", keys)
	}
}
