// Package offline is a deterministic model that needs no key and no
// network. It answers from the conversation so far, so that persistence is
// visible: it counts the turns and repeats what the user said before.
//
// # Quick start
//
//	a := &agent.Agent{Name: "demo", Model: offline.New(), Tools: builtin.Tools(), Store: st}
//
// # Requests it understands
//
// It calls the built-in tools from plain requests:
//
//	calc 2*(3+4)             -> calc {"expression":"2*(3+4)"}
//	remember color=blue      -> remember {"key":"color","value":"blue"}
//	recall color             -> recall {"key":"color"}
//	time (or clock)          -> clock {}
//	append buy milk to f.txt -> append_file {"path":"f.txt","line":"buy milk"}
//
// Several requests separated by ";" become parallel tool calls. The same
// request history always gives the same answer.
//
// Its usage is provider.EstimateTokens of the request (input) and
// provider.EstimateMessageTokens of its answer (output), so that a context
// budget can be checked against what it reports. Asked for a summary
// (provider.PurposeSummary), it answers with provider.Digest; its turn
// count goes on from the turns that digest covers.
package offline
