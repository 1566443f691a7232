// Package reliability holds cairn's end-to-end reliability tests; it has no
// API. They run the real cairn command and the agent runtime against every
// backend (file, sqlite, postgres, redis, mongodb):
//
//   - crashes: a scripted session run by the cairn binary is killed with
//     SIGKILL at random moments and resumed with `cairn sessions resume`
//     until it completes, then checked against an uninterrupted run;
//   - outages: a TCP proxy between cairn and a server cuts every
//     connection mid-run and later lets them through again, with
//     on_error "degrade" and "fail", and a store that is down at start;
//   - exactly once under partial failure: the cairn binary against
//     PostgreSQL, Redis and MongoDB behind the proxy, cut, stalled or
//     killed at points the store shows (a degraded run cut until it ends,
//     a cut-off holder past its lease, a cut that heals, a worker
//     takeover, a stall longer than the lease, a SIGKILL during the
//     backlog flush), counting side effects made twice, steps recorded
//     twice and acknowledged events lost.
//
// The proxy, the processes and the backends come from internal/testing/fault.
// The server backends find their test servers through CAIRN_TEST_POSTGRES,
// CAIRN_TEST_REDIS and CAIRN_TEST_MONGODB. The default run lands 20 kills
// on each backend; -long (or CAIRN_RELIABILITY_LONG=1) lands 200 on each.
// docs/RELIABILITY.md describes the method and the figures.
package reliability
