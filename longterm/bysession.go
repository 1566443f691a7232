package longterm

import (
	"context"
	"errors"
	"fmt"
)

// DeleteBySession erases the items whose Source names session — the
// memories an agent saved while it ran that session — in every namespace,
// and returns how many it erased. It reads every item once (a store keeps
// no index by source), so its cost grows with the store. An item replaced
// meanwhile is read again and erased only if it still comes from session;
// one deleted or expired meanwhile is passed over.
func DeleteBySession(ctx context.Context, s Store, session string) (int, error) {
	if session == "" {
		return 0, fmt.Errorf("%w: delete by session: the session ID is empty", ErrInvalid)
	}
	var found []Item
	for cursor := ""; ; {
		page, err := s.List(ctx, ListOptions{Limit: MaxListLimit, Cursor: cursor})
		if err != nil {
			return 0, fmt.Errorf("delete the memories of session %s: %w", session, err)
		}
		for _, it := range page.Items {
			if it.Source.Session == session {
				found = append(found, it)
			}
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	n := 0
	for _, it := range found {
		for {
			err := s.Delete(ctx, it.Namespace, it.Key, it.Version)
			if err == nil {
				n++
				break
			}
			if errors.Is(err, ErrNotFound) {
				break
			}
			if !errors.Is(err, ErrConflict) {
				return n, fmt.Errorf("delete the memories of session %s: %s %s: %w", session, it.Namespace, it.Key, err)
			}
			now, err := s.Get(ctx, it.Namespace, it.Key)
			if errors.Is(err, ErrNotFound) {
				break
			}
			if err != nil {
				return n, fmt.Errorf("delete the memories of session %s: %s %s: %w", session, it.Namespace, it.Key, err)
			}
			if now.Source.Session != session {
				break
			}
			it = *now
		}
	}
	return n, nil
}
