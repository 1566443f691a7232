// Package fault injects the failures that cairn's reliability and
// linearizability tests put a real system through. It has no part in
// cairn itself.
//
// # Networks
//
// A Proxy is a TCP proxy in front of a real server (PostgreSQL, Redis,
// MongoDB). A store opened on Proxy.URL(serverURL) reaches the server
// through it, and the test decides what the network does:
//
//   - Cut resets every proxied connection and resets new ones as they
//     arrive: a server that went away, or a cable pulled out.
//   - Stall holds every byte in both directions, for a while or until
//     Release, without closing anything: new connections are accepted and
//     their bytes held too. What a client sent during a stall still
//     reaches the server when it ends, even if the client gave up on it.
//   - StallReplies holds the server's replies alone: requests are applied
//     and their answers wait, to be dropped by a Cut (a lost reply).
//   - Delay adds latency to every byte forwarded from then on.
//   - Heal undoes them all.
//
// CheckCut and CheckStall run a store through a cut and a stall and want
// each call to fail as an outage, and to go through once the network is
// back; WantOutage and WantAnswer tell an outage from an answer of the
// server, and AppendLoad makes the two calls every outage test makes.
//
// # Processes
//
// Build compiles a command (the cairn binary) once per test binary;
// Start runs it with its output captured, and Process.Kill, Stop and Cont
// send SIGKILL, SIGSTOP and SIGCONT. Until polls a condition (a session's
// events in the store, say) so that a fault lands at a point the store
// shows, not after a sleep.
//
// # Disks
//
// SmallDisk mounts a tmpfs of a given size (the test runs as root, or
// with CAP_SYS_ADMIN) and Fill fills it, so that the next write of a store
// on it fails with ENOSPC from the kernel, as on a real full disk. Where
// mount is not permitted, NoSpace wraps a store so that every write fails
// with an injected ENOSPC (a *os.PathError wrapping syscall.ENOSPC, as the
// file and sqlite stores report it): the same error, at the store's edge
// rather than in the kernel.
package fault
