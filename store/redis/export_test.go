package redis

import (
	"context"
	"slices"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/cairnhq/cairn"
)

// NewSplit returns a store that keeps the namespace index out of its
// scripts, as it does on Redis Cluster, so that the Cluster code path runs
// against a single test server.
func NewSplit(client goredis.UniversalClient, opts cairn.StoreOptions) (*Store, error) {
	return newStore(client, opts, true)
}

// EventsKey returns the key of session id's events list.
func EventsKey(s *Store, id string) string { return s.eventsKey(id) }

// MetaKey returns the key of session id's meta hash.
func MetaKey(s *Store, id string) string { return s.metaKey(id) }

// SideKeys returns the keys of the side indexes of the namespace that
// exist, but those of the text index.
func SideKeys(s *Store) []string {
	keys, _ := s.client.Keys(context.Background(), s.side("*")).Result()
	return slices.DeleteFunc(keys, func(k string) bool { return strings.HasPrefix(k, s.side("search:")) })
}

// SearchKeys returns the namespace keys of the text index: its pairs of
// token and session, and its statistics.
func SearchKeys(s *Store) (pairs, stats string) {
	k := s.searchKeys()
	return k[0], k[1]
}

// TermsKey returns the key of session id's postings in the text index.
func TermsKey(s *Store, id string) string { return s.termsKey(id) }

// Pipelines returns how many pipelines of more than one append the store
// sent, and how many appends they held.
func (s *Store) Pipelines() (pipelines, appends int64) { return s.queue.Stats() }
