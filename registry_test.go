package cairn_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
)

var errSeen = errors.New("seen")

func TestOpen_MultiHostURL(t *testing.T) {
	var got string
	cairn.Register("multihost-test", func(_ context.Context, u *url.URL, _ cairn.StoreOptions) (cairn.Store, error) {
		got = u.String()
		return nil, errSeen
	})
	for _, raw := range []string{
		"multihost-test://h1:27017,h2:27017/db?replicaSet=rs",
		"multihost-test://user:pw@h1,h2:1/",
		"multihost-test://h1:1/db",
	} {
		got = ""
		if _, err := cairn.Open(context.Background(), raw, cairn.StoreOptions{}); !errors.Is(err, errSeen) {
			t.Fatalf("Open(%q): %v", raw, err)
		}
		if got != raw {
			t.Errorf("the backend got %q, want %q", got, raw)
		}
	}
	if _, err := cairn.Open(context.Background(), "multihost-test://h1,,h2 x/", cairn.StoreOptions{}); err == nil || errors.Is(err, errSeen) {
		t.Errorf("a malformed host list reached the backend: %v", err)
	}
	if _, err := cairn.Open(context.Background(), "nosuch://x", cairn.StoreOptions{}); err == nil {
		t.Error("an unknown scheme opened")
	}
}

func TestRegister_Twice(t *testing.T) {
	open := func(context.Context, *url.URL, cairn.StoreOptions) (cairn.Store, error) { return nil, nil }
	cairn.Register("twice-test", open)
	defer func() {
		if recover() == nil {
			t.Error("registering a scheme twice did not panic")
		}
	}()
	cairn.Register("twice-test", open)
}

// TestOpen_MalformedURL checks that a URL that does not parse is refused
// with an error that names it without its password.
func TestOpen_MalformedURL(t *testing.T) {
	_, err := cairn.Open(t.Context(), "postgres://u:s3cret@h:bad/db", cairn.StoreOptions{})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), `malformed URL "postgres://u:xxxxx@h:bad/db"`) {
		t.Errorf("Open of a malformed URL: %v, want an error naming it without the password", err)
	}
}

// TestOpen_UnregisteredScheme checks that a URL of a backend whose package
// was not imported names the import that registers it.
func TestOpen_UnregisteredScheme(t *testing.T) {
	_, err := cairn.Open(t.Context(), "postgres://u:s3cret@h/db", cairn.StoreOptions{})
	want := `import _ "github.com/cairnhq/cairn/store/postgres" (or "github.com/cairnhq/cairn/store/all")`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open of an unregistered postgres URL: %v, want an error naming %s", err, want)
	}
	_, err = cairn.Open(t.Context(), "nosuch://x", cairn.StoreOptions{})
	if err == nil || !strings.Contains(err.Error(), `"github.com/cairnhq/cairn/store/all"`) {
		t.Errorf("Open of an unknown scheme: %v, want an error naming store/all", err)
	}
}
