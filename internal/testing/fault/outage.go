package fault

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/storetest"
)

// WantOutage fails the test unless err is an outage: cairn.IsUnavailable
// holds and it wraps cairn.ErrUnavailable.
func WantOutage(t testing.TB, what string, err error) {
	t.Helper()
	if !cairn.IsUnavailable(err) || !errors.Is(err, cairn.ErrUnavailable) {
		t.Errorf("%s: got %v (%T), want an outage (cairn.IsUnavailable, wrapping cairn.ErrUnavailable)", what, err, errors.Unwrap(err))
	}
}

// WantAnswer fails the test unless err is an error that is not an outage.
func WantAnswer(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil || cairn.IsUnavailable(err) {
		t.Errorf("%s: got %v, want an error that is not an outage", what, err)
	}
}

// AppendLoad appends seq last+1 to session id and loads the session, each
// within d (testenv.Bounded), and returns their errors.
func AppendLoad(t testing.TB, s cairn.Store, id string, last int64, d time.Duration) (appendErr, loadErr error) {
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

// CheckCut runs s, a store that reaches its server through p, through a
// cut network: it creates a session, cuts p, and wants Append and Load
// (each within d) and List to fail as outages; once p heals, the same
// append goes through once.
func CheckCut(t testing.TB, s cairn.Store, p *Proxy, d time.Duration) {
	t.Helper()
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "cut"}); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	appendErr, loadErr := AppendLoad(t, s, "cut", 0, d)
	WantOutage(t, "Append while cut", appendErr)
	WantOutage(t, "Load while cut", loadErr)
	_, err := s.List(t.Context(), cairn.ListOptions{})
	WantOutage(t, "List while cut", err)
	p.Heal()
	if err := s.Append(t.Context(), "cut", 0, storetest.Custom(1, "during the outage")); err != nil {
		t.Fatalf("Append after the network came back: %v", err)
	}
	if rec, err := s.Load(t.Context(), "cut", 0); err != nil || len(rec.Events) != 1 {
		t.Fatalf("Load after the network came back: %v, want 1 event", err)
	}
}

// CheckStall runs s, a store that reaches its server through p, through a
// network that holds every byte: it creates a session, stalls p, and wants
// Append, Load and Delete, each with a context that ends after 300 ms, to
// return with it as outages. Then it cuts p, to drop what the stall held,
// and heals it.
func CheckStall(t testing.TB, s cairn.Store, p *Proxy) {
	t.Helper()
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "stall"}); err != nil {
		t.Fatal(err)
	}
	p.Stall(0)
	const d = 300 * time.Millisecond
	appendErr, loadErr := AppendLoad(t, s, "stall", 0, d)
	WantOutage(t, "Append while stalled", appendErr)
	WantOutage(t, "Load while stalled", loadErr)
	err := testenv.Bounded(t, d, "Delete", func(ctx context.Context) error { return s.Delete(ctx, "stall") })
	WantOutage(t, "Delete while stalled", err)
	p.Cut()
	p.Heal()
}
