package cairn

// MaxFirstMessage is how much of the first user message SessionInfo keeps.
const MaxFirstMessage = 200
