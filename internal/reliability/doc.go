// Package reliability holds cairn's end-to-end reliability tests; it has no
// API. They run the real cairn command and the agent runtime against every
// backend (file, sqlite, postgres, redis, mongodb):
//
//   - crashes: a scripted session run by the cairn binary is killed with
//     SIGKILL at random moments and resumed with `cairn sessions resume`
//     until it completes, then checked against an uninterrupted run;
//   - outages: a TCP proxy between cairn and a server cuts every
//     connection mid-run and later lets them through again, with
//     on_error "degrade" and "fail", and a store that is down at start.
//
// The server backends find their test servers through CAIRN_TEST_POSTGRES,
// CAIRN_TEST_REDIS and CAIRN_TEST_MONGODB. The default run lands 20 kills
// on each backend; -long (or CAIRN_RELIABILITY_LONG=1) lands 200 on each.
// docs/RELIABILITY.md describes the method and the figures.
package reliability
