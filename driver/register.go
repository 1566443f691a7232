package driver

import (
	"context"
	"net/url"

	"github.com/cairnhq/cairn"
)

// RegisterByURL registers open with cairn.Register for each of schemes:
// for a server backend whose constructor takes the URL whole (the
// server's own URL or DSN). A failed open returns a nil Store.
func RegisterByURL[S cairn.Store](open func(ctx context.Context, url string, opts cairn.StoreOptions) (S, error), schemes ...string) {
	opener := func(ctx context.Context, u *url.URL, opts cairn.StoreOptions) (cairn.Store, error) {
		s, err := open(ctx, u.String(), opts)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	for _, scheme := range schemes {
		cairn.Register(scheme, opener)
	}
}
