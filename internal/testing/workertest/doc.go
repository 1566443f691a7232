// Package workertest runs real `cairn worker` processes against real
// shared stores (PostgreSQL, Redis, and MongoDB through FerretDB, and a
// file store shared by the processes of one machine) and checks what
// leases promise when workers die or stall: every queued session
// completes, no session is run by two workers at once, no step is recorded
// twice, and the sessions of a killed worker are finished by the others.
//
// It has no API; its tests build the cairn command once and drive it as a
// user would. The throughput runs (1, 2 and 4 workers) are behind the
// -workertest.throughput flag.
package workertest
