package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/internal/wire"
)

func TestMain(m *testing.M) {
	testenv.QuickRaceExit()
	testscript.Main(m, map[string]func(){
		"cairn": func() { os.Exit(run(os.Args[1:])) },
		// cairnexit N ARGS... runs cairn ARGS... and succeeds when it exits
		// with status N, so that scripts check the documented statuses.
		"cairnexit": cairnExit,
		// shortids checks that each generated ID that sessions list shows
		// in short form names its session for sessions show.
		"shortids": shortIDs,
		// listpages ARGS... pages through cairn --json sessions list ARGS...
		// as a script would, following the next_cursor record on stderr,
		// and prints "page N: ID ID …" for each page.
		"listpages": listPages,
		// jsonone FILE succeeds when FILE holds exactly one JSON document.
		"jsonone": jsonOne,
		// jsonlines FILE succeeds when every line of FILE is a JSON object.
		"jsonlines": jsonLines,
		// jsonfield FILE KEY prints one top-level field of a JSON object,
		// canonicalised, so scripts can compare parts of --json output.
		"jsonfield": jsonField,
		// mkbig FILE N writes a memory document with one event of about N bytes.
		"mkbig": mkBig,
		// mkkey FILE FORM HEX writes the key whose bytes are HEX as a key
		// file: raw (the bytes alone), rawnl (the bytes and a newline) or
		// base64 (a line of base64).
		"mkkey": mkKey,
		// appendplain STORE ID TEXT appends a turn in clear (run.started,
		// message.user, model.response, run.finished) to a session,
		// through the backend itself, as a process without the key could
		// before such processes were refused.
		"appendplain": appendPlain,
		// inputwithin FILE N reads a memory document (sessions export) and
		// succeeds when every model.response's input tokens are at most
		// N; it prints the counts of user messages, responses and
		// compactions and the largest input.
		"inputwithin": inputWithin,
	})
}

// TestScripts runs the command-line scripts in testdata/script: each runs
// the real cairn binary in a fresh folder with a fresh home, against the
// embedded defaults unless it says otherwise.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, ".home")
			env.Setenv("HOME", home)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			env.Setenv("XDG_DATA_HOME", filepath.Join(home, ".local", "share"))
			for _, k := range []string{"CAIRN_TEST_POSTGRES", "CAIRN_TEST_REDIS", "CAIRN_TEST_MONGODB", "GORACE"} {
				env.Setenv(k, os.Getenv(k))
			}
			return nil
		},
		RequireExplicitExec: true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// sleep DURATION waits, for scripts that let a TTL pass.
			"sleep": func(ts *testscript.TestScript, neg bool, args []string) {
				d, err := time.ParseDuration(args[0])
				ts.Check(err)
				time.Sleep(d)
			},
		},
	})
}

// exitIf ends a command of the scripts that failed: when err is not nil,
// it prints words and err to stderr, as fmt.Println does, and exits 1.
func exitIf(err error, words ...any) {
	if err != nil {
		fmt.Fprintln(os.Stderr, append(words, err)...)
		os.Exit(1)
	}
}

// needArgs ends a command of the scripts that was not given n arguments:
// it prints usage to stderr and exits 2.
func needArgs(n int, usage string) {
	if len(os.Args) != n+1 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
}

func jsonField() {
	needArgs(2, "usage: jsonfield FILE KEY")
	data, err := os.ReadFile(os.Args[1])
	exitIf(err)
	var m map[string]json.RawMessage
	exitIf(json.Unmarshal(data, &m))
	c, err := wire.Canonical(m[os.Args[2]])
	exitIf(err)
	fmt.Println(string(c))
	os.Exit(0)
}

func mkBig() {
	n := 0
	fmt.Sscan(os.Args[2], &n)
	text := make([]byte, n)
	for i := range text {
		text[i] = 'x'
	}
	doc := `{"format":"cairn.memory","version":1,"events":[{"v":1,"seq":1,"at":"2026-01-02T03:04:05Z","kind":"message.system","run":"r","data":{"text":"` + string(text) + `"}}]}`
	exitIf(os.WriteFile(os.Args[1], []byte(doc), 0o644))
	os.Exit(0)
}

func mkKey() {
	needArgs(3, "usage: mkkey FILE raw|rawnl|base64 HEX")
	secret, err := hex.DecodeString(os.Args[3])
	exitIf(err)
	var data []byte
	switch os.Args[2] {
	case "raw":
		data = secret
	case "rawnl":
		data = append(secret, '\n')
	case "base64":
		data = []byte(base64.StdEncoding.EncodeToString(secret) + "\n")
	default:
		fmt.Fprintln(os.Stderr, "mkkey: unknown form", os.Args[2])
		os.Exit(2)
	}
	exitIf(os.WriteFile(os.Args[1], data, 0o600))
	os.Exit(0)
}

func appendPlain() {
	needArgs(3, "usage: appendplain STORE ID TEXT")
	ctx := context.Background()
	st, err := cairn.Open(ctx, os.Args[1], cairn.StoreOptions{})
	if err == nil {
		defer st.Close()
		var rec *cairn.Record
		if rec, err = st.Load(ctx, os.Args[2], 1<<62); err == nil {
			last := rec.Info.LastSeq
			var evs []cairn.Event
			for _, d := range []struct {
				kind cairn.Kind
				v    any
			}{
				{cairn.KindRunStarted, cairn.RunStarted{RunID: "plain", Agent: "assistant", Model: "offline"}},
				{cairn.KindMessageUser, cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: os.Args[3]}}}},
				{cairn.KindModelResponse, cairn.ModelResponse{Text: "You said " + os.Args[3], Model: "offline"}},
				{cairn.KindRunFinished, cairn.RunFinished{Status: cairn.StatusCompleted, Output: "You said " + os.Args[3]}},
			} {
				e := cairn.MustEvent(d.kind, "plain", d.v)
				e.Seq = last + int64(len(evs)) + 1
				evs = append(evs, e)
			}
			err = st.Append(ctx, os.Args[2], last, evs...)
		}
	}
	exitIf(err)
	os.Exit(0)
}

func cairnExit() {
	want, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "usage: cairnexit N ARGS...")
		os.Exit(2)
	}
	if got := run(os.Args[2:]); got != want {
		fmt.Fprintf(os.Stderr, "cairnexit: cairn exited %d, want %d\n", got, want)
		os.Exit(1)
	}
	os.Exit(0)
}

func jsonOne() {
	data, err := os.ReadFile(os.Args[1])
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		var v any
		if err = dec.Decode(&v); err == nil {
			if _, more := dec.Token(); more != io.EOF {
				err = fmt.Errorf("more than one JSON document (or text after it): %q", data)
			}
		}
	}
	exitIf(err, "jsonone:")
	os.Exit(0)
}

func jsonLines() {
	data, err := os.ReadFile(os.Args[1])
	exitIf(err, "jsonlines:")
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if line == "" && i == 0 {
			break // no line at all
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			fmt.Fprintf(os.Stderr, "jsonlines: line %d is not a JSON object: %q\n", i+1, line)
			os.Exit(1)
		}
	}
	os.Exit(0)
}

func listPages() {
	cursor := ""
	for page := 1; ; page++ {
		args := append([]string{"--json", "sessions", "list"}, os.Args[1:]...)
		if cursor != "" {
			args = append(args, "--cursor", cursor)
		}
		var out, errs bytes.Buffer
		cmd := exec.Command("cairn", args...) // the binary testscript put on PATH
		cmd.Stdout, cmd.Stderr = &out, &errs
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "listpages:", args, err, errs.String())
			os.Exit(1)
		}
		var infos []struct{ ID string }
		if err := json.Unmarshal(out.Bytes(), &infos); err != nil {
			fmt.Fprintln(os.Stderr, "listpages: stdout is not a JSON array:", err)
			os.Exit(1)
		}
		ids := make([]string, len(infos))
		for i, info := range infos {
			ids[i] = info.ID
		}
		fmt.Printf("page %d: %s\n", page, strings.Join(ids, " "))
		cursor = ""
		for _, line := range strings.Split(strings.TrimSpace(errs.String()), "\n") {
			var rec struct {
				Next string `json:"next_cursor"`
			}
			if line != "" && json.Unmarshal([]byte(line), &rec) == nil && rec.Next != "" {
				cursor = rec.Next
			}
		}
		if cursor == "" {
			os.Exit(0)
		}
		if page > 100 {
			fmt.Fprintln(os.Stderr, "listpages: more than 100 pages")
			os.Exit(1)
		}
	}
}

func shortIDs() {
	listed := func(args ...string) string {
		var b bytes.Buffer
		cmd := exec.Command("cairn", args...) // the binary testscript put on PATH
		cmd.Stdout = &b
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "shortids:", args, err)
			os.Exit(1)
		}
		return b.String()
	}
	var infos []struct{ ID string }
	exitIf(json.Unmarshal([]byte(listed("--json", "sessions", "list")), &infos), "shortids:")
	n := 0
	for _, line := range strings.Split(listed("sessions", "list"), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) == 0 || slices.ContainsFunc(infos, func(i struct{ ID string }) bool { return i.ID == f[0] }) {
			continue // shown whole
		}
		n++
		var whole string
		for _, i := range infos {
			if strings.HasPrefix(i.ID, f[0]) {
				if whole != "" {
					fmt.Fprintf(os.Stderr, "shortids: %s starts %s and %s\n", f[0], whole, i.ID)
					os.Exit(1)
				}
				whole = i.ID
			}
		}
		if !strings.Contains(listed("--json", "sessions", "show", f[0]), `"id": "`+whole+`"`) {
			fmt.Fprintf(os.Stderr, "shortids: show %s does not show %s\n", f[0], whole)
			os.Exit(1)
		}
	}
	if n == 0 {
		fmt.Fprintln(os.Stderr, "shortids: no short ID listed")
		os.Exit(1)
	}
	os.Exit(0)
}
