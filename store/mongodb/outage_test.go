package mongodb_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/fault"
	"github.com/cairnhq/cairn/internal/testenv"
	"github.com/cairnhq/cairn/store/mongodb"
	"github.com/cairnhq/cairn/store/storetest"
)

// wantOutage fails the test unless err is an outage that wraps
// cairn.ErrUnavailable.
func wantOutage(t *testing.T, what string, err error) {
	t.Helper()
	if !cairn.IsUnavailable(err) || !errors.Is(err, cairn.ErrUnavailable) {
		t.Errorf("%s: got %v, want an outage (cairn.IsUnavailable, wrapping cairn.ErrUnavailable)", what, err)
	}
}

// wantAnswer fails the test unless err is an error that is not an outage.
func wantAnswer(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || cairn.IsUnavailable(err) {
		t.Errorf("%s: got %v, want an error that is not an outage", what, err)
	}
}

// appendLoad appends seq last+1 to session id and loads it, each within d.
func appendLoad(t *testing.T, s cairn.Store, id string, last int64, d time.Duration) (appendErr, loadErr error) {
	t.Helper()
	appendErr = testenv.Bounded(t, d, "Append", func(ctx context.Context) error {
		return s.Append(ctx, id, last, storetest.Custom(last+1, "during the outage"))
	})
	loadErr = testenv.Bounded(t, d, "Load", func(ctx context.Context) error {
		_, err := s.Load(ctx, id, 0)
		return err
	})
	return appendErr, loadErr
}

// proxiedStore opens a store on the test server through a fault proxy,
// with the driver's server selection timeout set to selectMS.
func proxiedStore(t *testing.T, selectMS string) (*mongodb.Store, *fault.Proxy) {
	t.Helper()
	p := fault.StartProxy(t, serverURI(t))
	ns := "t_" + time.Now().Format("150405.000000000")
	ns = strings.ReplaceAll(ns, ".", "_")
	s, err := mongodb.Open(t.Context(), fault.WithQuery(p.URL(serverURI(t)), "serverSelectionTimeoutMS", selectMS), cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Heal()
		dropCollections(t, s)
		s.Close()
	})
	return s, p
}

func TestOpen_NothingListens(t *testing.T) {
	_, err := mongodb.Open(t.Context(), "mongodb://"+testenv.FreeAddr(t)+"/?serverSelectionTimeoutMS=500", cairn.StoreOptions{})
	wantOutage(t, "Open of a port where nothing listens", err)
}

// TestStore_OutageCut resets every connection to the server and refuses
// new ones: each call fails as an outage, and once the network is back the
// same append goes through once.
func TestStore_OutageCut(t *testing.T) {
	s, p := proxiedStore(t, "2000") // a cut shows soon
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "cut"}); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	appendErr, loadErr := appendLoad(t, s, "cut", 0, 20*time.Second)
	wantOutage(t, "Append while cut", appendErr)
	wantOutage(t, "Load while cut", loadErr)
	_, err := s.List(t.Context(), cairn.ListOptions{})
	wantOutage(t, "List while cut", err)
	p.Heal()
	if err := s.Append(t.Context(), "cut", 0, storetest.Custom(1, "during the outage")); err != nil {
		t.Fatalf("Append after the network came back: %v", err)
	}
	if rec, err := s.Load(t.Context(), "cut", 0); err != nil || len(rec.Events) != 1 {
		t.Fatalf("Load after the network came back: %v, want 1 event", err)
	}
}

// TestStore_OutageStall holds every byte between the store and the
// server: each call returns with its context, as an outage, although an
// Append that failed undoes its half-done write (on its own time, not the
// caller's).
func TestStore_OutageStall(t *testing.T) {
	s, p := proxiedStore(t, "60000") // the driver waits long
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "stall"}); err != nil {
		t.Fatal(err)
	}
	p.Stall(0)
	appendErr, loadErr := appendLoad(t, s, "stall", 0, 300*time.Millisecond)
	wantOutage(t, "Append while stalled", appendErr)
	wantOutage(t, "Load while stalled", loadErr)
	err := testenv.Bounded(t, 300*time.Millisecond, "Delete", func(ctx context.Context) error { return s.Delete(ctx, "stall") })
	wantOutage(t, "Delete while stalled", err)
	p.Cut() // drop what the stall held
	p.Heal()
}

// TestStore_NotOutages provokes answers of the server that are not
// outages: a database name the server refuses, a session document that
// does not decode.
func TestStore_NotOutages(t *testing.T) {
	t.Run("invalid namespace", func(t *testing.T) {
		uri := serverURI(t)
		base, query, _ := strings.Cut(uri, "?")
		if i := strings.Index(strings.TrimPrefix(base, "mongodb://"), "/"); i >= 0 {
			base = base[:len("mongodb://")+i]
		}
		bad := base + "/" + strings.Repeat("d", 200)
		if query != "" {
			bad += "?" + query
		}
		_, err := mongodb.Open(t.Context(), bad, cairn.StoreOptions{})
		wantAnswer(t, "Open of a database whose name is too long", err)
	})
	t.Run("undecodable document", func(t *testing.T) {
		s := openStore(t, cairn.StoreOptions{Namespace: "t_" + strings.ReplaceAll(time.Now().Format("150405.000000000"), ".", "_")})
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: "x"}); err != nil {
			t.Fatal(err)
		}
		sessions, _ := s.Collections()
		if _, err := client(t).Collection(sessions).UpdateOne(t.Context(), bson.D{{Key: "_id", Value: "x"}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "steps", Value: "many"}}}}); err != nil {
			t.Fatal(err)
		}
		_, err := s.Load(t.Context(), "x", 0)
		wantAnswer(t, "Load of a session document with a string for steps", err)
	})
}

// TestOutage_Codes classifies the server's answers by code, for those a
// test cannot provoke on a single FerretDB: a shutdown, a step-down, a
// replica set without a primary.
func TestOutage_Codes(t *testing.T) {
	for _, c := range []struct {
		err    error
		outage bool
	}{
		{mongo.CommandError{Code: 91, Name: "ShutdownInProgress"}, true},
		{mongo.CommandError{Code: 11600, Name: "InterruptedAtShutdown"}, true},
		{mongo.CommandError{Code: 189, Name: "PrimarySteppedDown"}, true},
		{mongo.CommandError{Code: 10107, Name: "NotWritablePrimary"}, true},
		{mongo.CommandError{Code: 13436, Name: "NotPrimaryOrSecondary"}, true},
		{mongo.CommandError{Code: 6, Name: "HostUnreachable"}, true},
		{mongo.CommandError{Code: 50, Name: "MaxTimeMSExpired"}, true},
		{mongo.CommandError{Code: 1, Name: "InternalError", Labels: []string{"NetworkError"}}, true},
		{mongo.CommandError{Code: 13, Name: "Unauthorized"}, false},
		{mongo.CommandError{Code: 73, Name: "InvalidNamespace"}, false},
		{mongo.CommandError{Code: 14031, Name: "OutOfDiskSpace"}, false},
		{mongo.WriteException{WriteErrors: mongo.WriteErrors{{Code: 11000, Message: "E11000 duplicate key"}}}, false},
		{mongo.WriteException{WriteErrors: mongo.WriteErrors{{Code: 121, Message: "Document failed validation"}}}, false},
	} {
		if got := cairn.IsUnavailable(mongodb.Unavailable(c.err)); got != c.outage {
			t.Errorf("IsUnavailable(%v) = %v, want %v", c.err, got, c.outage)
		}
	}
}

// TestStore_AppendBeforeCreate: an append to a session that does not
// exist inserts its event documents, and before its commit runs the
// session is created. The append was asked of a missing session: it
// answers ErrNotFound (it takes effect before the Create), neither a
// conflict with a session at the seq it expected nor events written into
// the new session.
func TestStore_AppendBeforeCreate(t *testing.T) {
	p := fault.StartProxy(t, serverURI(t))
	ns := newNamespace()
	s, err := mongodb.Open(t.Context(), p.URL(serverURI(t)), cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	direct := openStore(t, cairn.StoreOptions{Namespace: ns})
	p.StallReplies()
	done := make(chan error, 1)
	go func() {
		done <- testenv.Bounded(t, 20*time.Second, "Append", func(ctx context.Context) error {
			return s.Append(ctx, "late", 0, storetest.Custom(1, "before the create"))
		})
	}()
	fault.Until(t, 10*time.Second, "the insert's reply", func() (bool, error) { return p.Held() > 0, nil })
	create(t, direct, "late")
	p.Release()
	err = <-done
	if !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Append to a session created while it ran: got %v, want ErrNotFound", err)
	}
	if rec := load(t, direct, "late"); len(rec.Events) != 0 {
		t.Errorf("the session created after the append was asked holds %d events, want 0", len(rec.Events))
	}
}
