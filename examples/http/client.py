#!/usr/bin/env python3
"""A Python agent that keeps its memory in cairn over HTTP (standard library only).

Start a server first:   cairn serve            (it prints the address and a token)
Then:                   CAIRN_URL=http://127.0.0.1:7420 CAIRN_TOKEN=... python3 client.py [SESSION_ID]

The agent records each step as an event, appended with the seq it expects the
session to be at: if another writer got there first, cairn answers 409 with the
session's last seq, and the agent reads what it missed and decides again. A
later process (in any language) rebuilds the conversation from /state.
"""
import json
import os
import sys
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timezone

URL = os.environ.get("CAIRN_URL", "http://127.0.0.1:7420").rstrip("/")
TOKEN = os.environ["CAIRN_TOKEN"]


class CairnError(Exception):
    def __init__(self, status, error):
        super().__init__(f"{status} {error.get('code')}: {error.get('message')}")
        self.status, self.code = status, error.get("code")
        self.field, self.last_seq = error.get("field"), error.get("last_seq")


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(URL + path, data=data, method=method, headers={
        "Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as res:
            raw = res.read()
            return json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raise CairnError(e.code, json.loads(e.read())["error"]) from None


def now():
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class Memory:
    """One session's events, appended with an expected seq."""

    def __init__(self, session_id):
        self.id = session_id
        try:
            self.seq = call("POST", "/api/sessions", {"id": session_id, "labels": {"lang": "python"}})["session"]["last_seq"]
        except CairnError as e:
            if e.code != "exists":
                raise
            self.seq = call("GET", f"/api/sessions/{session_id}")["session"]["last_seq"]

    def append(self, *events):
        # Each event carries its time, so that sending the same append again
        # after a lost reply is recognised as done (200, nothing written twice).
        events = [dict(e, at=now()) for e in events]
        for _ in range(3):
            try:
                self.seq = call("POST", f"/api/sessions/{self.id}/events",
                                {"expect_seq": self.seq, "events": events})["last_seq"]
                return
            except CairnError as e:
                if e.code != "conflict":
                    raise
                # Someone appended first: catch up, then decide again.
                missed = call("GET", f"/api/sessions/{self.id}/events?after={self.seq}")["events"]
                print(f"conflict at seq {self.seq}: {len(missed)} event(s) appended meanwhile, last seq {e.last_seq}")
                self.seq = e.last_seq
        raise RuntimeError("too many conflicts")

    def state(self):
        return call("GET", f"/api/sessions/{self.id}/state")["state"]


def user(text):
    return {"kind": "message.user", "data": {"parts": [{"type": "text", "text": text}]}}


def think(run, text, calls=()):
    """A model response, as this agent's own model client produced it."""
    return {"kind": "model.response", "run": run, "data": {
        "text": text, "tool_calls": list(calls), "model": "my-model", "finish_reason": "tool_calls" if calls else "stop",
        "usage": {"input_tokens": 42, "output_tokens": 7}, "latency_ms": 120}}


def main():
    sid = sys.argv[1] if len(sys.argv) > 1 else "py-" + uuid.uuid4().hex[:12]
    mem = Memory(sid)
    run = uuid.uuid4().hex
    mem.append(
        {"kind": "run.started", "run": run, "data": {"run_id": run, "agent": "py-agent", "model": "my-model", "reset": True,
                                                      "fingerprint": {"model": "my-model", "instructions": "", "tools": ""}}},
        {"kind": "memory.reset", "run": run, "data": {}},
        user("What is 6*7? Remember the answer."))
    # Think, then act: a tool call and its result, each step one append.
    call_ = {"id": "call_1", "name": "calc", "args": {"expression": "6*7"}}
    mem.append(think(run, "", [call_]))
    mem.append({"kind": "tool.result", "run": run, "data": {"call_id": "call_1", "name": "calc", "output": "42",
                                                            "is_error": False, "duration_ms": 1}},
               {"kind": "state.set", "run": run, "data": {"set": {"answer": 42}, "deleted": []}})

    # Another writer (another process of this agent, say) appends first.
    other = call("GET", f"/api/sessions/{sid}")["session"]["last_seq"]
    call("POST", f"/api/sessions/{sid}/events", {"expect_seq": other, "events": [
        {"kind": "custom", "run": run, "data": {"type": "example.note", "payload": {"from": "another writer"}}}]})

    mem.append(think(run, "6*7 = 42; I will remember it."),
               {"kind": "run.finished", "run": run, "data": {"status": "completed", "output": "6*7 = 42"}})

    # A bad event is refused with the field at fault; nothing is written.
    try:
        mem.append({"kind": "message.user", "data": {"parts": [{"type": "text", "text": 42}]}})
    except CairnError as e:
        print(f"refused: {e.status} {e.code} at {e.field}")

    # What any process sees: the state, rebuilt from the events.
    st = mem.state()
    print(f"session {sid}: status {st['status']}, {len(st['messages'])} messages, answer={st['variables']['answer']}, last seq {st['last_seq']}")
    assert st["status"] == "completed" and st["variables"]["answer"] == 42 and st["last_seq"] == mem.seq

    # The events as server-sent events, from a seq (as a reconnect with Last-Event-ID would).
    req = urllib.request.Request(f"{URL}/api/sessions/{sid}/stream", headers={
        "Authorization": "Bearer " + TOKEN, "Last-Event-ID": str(mem.seq - 2)})
    with urllib.request.urlopen(req, timeout=30) as res:
        got = []
        for line in res:
            if line.startswith(b"data: "):
                got.append(json.loads(line[6:])["kind"])
                if len(got) == 2:
                    break
    print("streamed:", ", ".join(got))
    assert got == ["model.response", "run.finished"], got


if __name__ == "__main__":
    main()
