// Package testing groups what cairn's tests are built on and nothing else
// imports: fault injection (fault), the linearizability and reliability
// tests (linearize, reliability), the mutation checks (mutate), MCP and
// provider test servers (mcptest, providertest), local Redis clusters
// (rediscluster), shared checks (testcheck), the test servers' addresses
// (testenv) and the worker tests (workertest). The stores' conformance
// suites are public: store/storetest and store/crypt/crypttest.
package testing
