// The conversation both sides of the comparison run, byte for byte: the
// Go side (bench/longconv/conversation.go) makes the same texts.
//
// Turn n (from 1): a 1 KB user message; the model answers 1 KB. Every
// third turn the model first asks for one call of the tool "lookup" with
// {"turn": n}, whose result is 1 KB, and then answers.

import { createHash } from "node:crypto";

/** Bytes of every user message, answer and tool result. */
export const SIZE = 1024;

/** The system message, given once, in the first turn. */
export const INSTRUCTIONS = "You are the assistant of a long benchmark conversation.";

/** The tool's name. */
export const TOOL = "lookup";

// 64 words: the texts read as word salad, so that a compressor (PostgreSQL
// compresses values over 2 KB) finds what it would in prose, no more.
const WORDS = [
  "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on",
  "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they", "you", "were",
  "their", "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when", "will", "would", "who", "so",
  "model", "agent", "memory", "store", "session", "event", "tool", "answer", "question", "turn", "state", "thread", "write", "read", "long", "short",
];
if (WORDS.length !== 64) throw new Error(`WORDS has ${WORDS.length} words, want 64`);

const KINDS = { user: 0, answer: 1, result: 2 };

/**
 * text returns the SIZE-byte text of a kind ("user", "answer" or "result")
 * for turn n: "user 000042:" and words drawn by a 32-bit linear
 * congruential generator seeded with n*4 + the kind's index.
 */
export function text(kind, n) {
  let x = (n * 4 + KINDS[kind]) >>> 0;
  let s = `${kind} ${String(n).padStart(6, "0")}:`;
  while (s.length < SIZE) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    s += " " + WORDS[x >>> 26];
  }
  return s.slice(0, SIZE);
}

/**
 * conversationSum is the SHA-256 (hex) of every text of the first n turns,
 * in order: both sides report it, and the driver refuses runs whose sums
 * differ.
 */
export function conversationSum(n) {
  const h = createHash("sha256");
  for (let i = 1; i <= n; i++) {
    h.update(text("user", i));
    if (i % 3 === 0) h.update(text("result", i));
    h.update(text("answer", i));
  }
  return h.digest("hex");
}

/** turnOf reads n back from a text made by text(). */
export function turnOf(t) {
  const m = /^[a-z]+ (\d{6}):/.exec(t);
  if (m === null) throw new Error(`not a text of the conversation: ${JSON.stringify(t.slice(0, 40))}`);
  return Number(m[1]);
}

/** callID is the ID of turn n's tool call. */
export function callID(n) {
  return "call_" + String(n).padStart(6, "0");
}

/**
 * messagesAfter returns how many messages a thread holds after n turns,
 * the system message included: a user message and an answer per turn, and
 * the tool call and its result every third turn.
 */
export function messagesAfter(n) {
  return 1 + 2 * n + 2 * Math.floor(n / 3);
}
