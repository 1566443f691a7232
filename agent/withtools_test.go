package agent_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/cairnhq/cairn"
	. "github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/provider/script"
	"github.com/cairnhq/cairn/store/memory"
)

// TestWithTools: the copy has every exported field of the agent (each set
// to a value of its own here, so that a field added later and not copied
// fails), the tools added after the agent's, and a's own tools unchanged;
// a session of the copy calls the added tool, in the agent's store.
func TestWithTools(t *testing.T) {
	st, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	echo := func(name string) *Tool {
		return NewTool(name, "says "+name, func(ctx context.Context, in struct{}) (string, error) { return name + " said", nil })
	}
	a := &Agent{Store: st}
	v := reflect.ValueOf(a).Elem()
	for i := range v.NumField() {
		f, ft := v.Field(i), v.Type().Field(i)
		if !ft.IsExported() || ft.Name == "Store" {
			continue
		}
		switch ft.Name {
		case "Model":
			a.Model = scripted(t, script.Step{ToolCalls: []script.Call{call("extra", `{}`)}}, script.Step{Text: "done"})
		case "Tools":
			a.Tools = []*Tool{echo("base")}
		case "Logger":
			a.Logger = quietLogger()
		case "TracerProvider", "MeterProvider":
			continue // interfaces: compared below as nil, set by their own tests
		default:
			switch f.Kind() {
			case reflect.String:
				f.SetString(ft.Name)
			case reflect.Int:
				f.SetInt(int64(i + 1))
			case reflect.Bool:
				f.SetBool(true)
			default:
				t.Fatalf("field %s (%s): the test does not know how to set it", ft.Name, f.Kind())
			}
		}
	}
	// Values the run below can work with, each still its own.
	a.Compaction, a.OnError, a.MaxSteps, a.ContextTokens, a.MaxToolOutput = CompactDrop, Fail, 5, 100_000, 1000
	b := a.WithTools(echo("extra"))
	bv := reflect.ValueOf(b).Elem()
	for i := range v.NumField() {
		ft := v.Type().Field(i)
		if !ft.IsExported() || ft.Name == "Tools" {
			continue
		}
		if !reflect.DeepEqual(v.Field(i).Interface(), bv.Field(i).Interface()) {
			t.Errorf("WithTools: %s = %v, want %v", ft.Name, bv.Field(i).Interface(), v.Field(i).Interface())
		}
	}
	names := func(ag *Agent) (out []string) {
		for _, t := range ag.Tools {
			out = append(out, t.Name())
		}
		return out
	}
	if got := names(b); !reflect.DeepEqual(got, []string{"base", "extra"}) {
		t.Errorf("the copy's tools: %v, want base and extra", got)
	}
	if got := names(a); !reflect.DeepEqual(got, []string{"base"}) {
		t.Errorf("the agent's tools after WithTools: %v, want base alone", got)
	}
	s, err := b.Start(t.Context(), WithID("with-tools"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(t.Context(), "call the extra tool")
	if err != nil || res.Output != "done" {
		t.Fatalf("run of the copy = %+v, %v", res, err)
	}
	rec, err := st.Load(t.Context(), "with-tools", 0)
	if err != nil {
		t.Fatal(err)
	}
	var said bool
	for _, e := range rec.Events {
		if v, _ := e.Decode(); v != nil {
			if r, ok := v.(*cairn.ToolResult); ok && r.Output == "extra said" {
				said = true
			}
		}
	}
	if !said {
		t.Error("the session in the agent's store holds no result of the added tool")
	}
}
