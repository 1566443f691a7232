package redis

import (
	"context"

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
// exist.
func SideKeys(s *Store) []string {
	keys, _ := s.client.Keys(context.Background(), s.side("*")).Result()
	return keys
}

// Pipelines returns how many pipelines of more than one append the store
// sent, and how many appends they held.
func (s *Store) Pipelines() (pipelines, appends int64) { return s.queue.Stats() }
