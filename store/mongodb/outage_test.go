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
	"github.com/cairnhq/cairn/internal/testing/fault"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/mongodb"
	"github.com/cairnhq/cairn/store/storetest"
)

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
	fault.WantOutage(t, "Open of a port where nothing listens", err)
}

// TestStore_OutageCut resets every connection to the server and refuses
// new ones: each call fails as an outage, and once the network is back the
// same append goes through once.
func TestStore_OutageCut(t *testing.T) {
	s, p := proxiedStore(t, "2000") // a cut shows soon
	fault.CheckCut(t, s, p, 20*time.Second)
}

// TestStore_OutageStall holds every byte between the store and the
// server: each call returns with its context, as an outage, although an
// Append that failed undoes its half-done write (on its own time, not the
// caller's).
func TestStore_OutageStall(t *testing.T) {
	s, p := proxiedStore(t, "60000") // the driver waits long
	fault.CheckStall(t, s, p)
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
		fault.WantAnswer(t, "Open of a database whose name is too long", err)
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
		fault.WantAnswer(t, "Load of a session document with a string for steps", err)
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
