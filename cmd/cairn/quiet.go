package main

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
)

// quietRedis drops go-redis's own log lines (dial retries and the like):
// the command reports store errors itself, once, with a hint.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func init() { goredis.SetLogger(quietRedis{}) }
