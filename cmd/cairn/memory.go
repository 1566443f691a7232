package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/longterm"
)

func newMemoryCmd(app *cli.App) *cobra.Command {
	c := &cobra.Command{
		Use:     "memory",
		Aliases: []string{"mem"},
		Short:   "Put, get, search, list and delete long-term memory",
		Long: `Long-term memory is what agents know across sessions: items of JSON under a
namespace (a slash path such as users/ada) and a key, with a text that
search matches, labels, an optional expiry and the session they came from.
It lives in the same store as the sessions (--store, CAIRN_STORE,
cairn.toml or .cairn/cairn.db) and is encrypted at rest by the same key.
docs/MEMORY.md tells the whole story.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	c.AddCommand(newMemoryPutCmd(app), newMemoryGetCmd(app), newMemorySearchCmd(app), newMemoryListCmd(app), newMemoryDeleteCmd(app))
	return c
}

// jsonItem is an item as the commands print it under --json: without its
// vector.
func jsonItem(it longterm.Item) longterm.Item {
	it.Vector = nil
	return it
}

// checkItemArgs checks the NAMESPACE and KEY arguments of an item.
func checkItemArgs(ns, key string) error {
	if err := checkNamespaceArg(ns); err != nil {
		return err
	}
	return checkKeyArg(key)
}

// checkNamespaceArg checks a NAMESPACE argument.
func checkNamespaceArg(ns string) error {
	if err := longterm.ValidateNamespace(ns); err != nil {
		return cli.Usage(cli.MemoryRules, "NAMESPACE %q: %v", ns, err)
	}
	return nil
}

// checkKeyArg checks a KEY argument.
func checkKeyArg(key string) error {
	if err := longterm.ValidateKey(key); err != nil {
		return cli.Usage(cli.MemoryRules, "KEY %q: %v", key, err)
	}
	return nil
}

// checkPrefixAndLimit checks --ns, when given, and --limit, which must be
// between 1 and most; what names a limit in the message.
func checkPrefixAndLimit(prefix string, limit, most int, what string) error {
	if prefix != "" {
		if err := longterm.ValidatePrefix(prefix); err != nil {
			return cli.Usage(cli.MemoryRules, "--ns %q: %v", prefix, err)
		}
	}
	if limit < 1 || limit > most {
		return cli.Usage(fmt.Sprintf("give --limit between 1 and %d", most), "--limit %d is not "+what, limit)
	}
	return nil
}

// parseLabels reads --label K=V flags.
func parseLabels(flag string, labels []string) (map[string]string, error) {
	if len(labels) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(labels))
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, cli.Usage("labels look like "+flag+" kind=preference", "%s %q is not NAME=VALUE", flag, l)
		}
		out[k] = v
	}
	if err := longterm.ValidateLabels(out); err != nil {
		return nil, cli.Usage(cli.MemoryRules, "%s: %v", flag, err)
	}
	return out, nil
}

// openMemoryLabels reads the --label flags, then opens the long-term
// memory, which the caller closes: the first steps of the commands that
// take labels.
func openMemoryLabels(ctx context.Context, app *cli.App, labels []string) (longterm.Store, map[string]string, error) {
	lbl, err := parseLabels("--label", labels)
	if err != nil {
		return nil, nil, err
	}
	mem, _, err := app.OpenMemory(ctx)
	if err != nil {
		return nil, nil, err
	}
	return mem, lbl, nil
}

// jsonValue returns VALUE as JSON: itself when it is a JSON document, a
// JSON string of it otherwise.
func jsonValue(v string) json.RawMessage {
	if json.Valid([]byte(v)) {
		return json.RawMessage(v)
	}
	b, _ := json.Marshal(v)
	return b
}

func newMemoryPutCmd(app *cli.App) *cobra.Command {
	var (
		text   string
		ttl    time.Duration
		labels []string
	)
	c := &cobra.Command{
		Use:   "put NAMESPACE KEY VALUE [--text TEXT] [--ttl DURATION] [--label NAME=VALUE]...",
		Short: "Create or replace a long-term memory item",
		Long: `Create the item under NAMESPACE and KEY, or replace the one there.

VALUE is stored as JSON: a JSON document as it is ('{"food":"pizza"}', 42,
true), anything else as a JSON string (pizza is "pizza"). --text is what
search matches (without it, the value's keys and scalars); --ttl expires the
item that long after this put (90s, 24h); --label adds a label that list and
search filter on, and may be repeated.

  cairn memory put users/ada favorite-food '{"food":"pizza"}' --text "Ada loves pizza" --label kind=preference`,
		Args: args(cobra.ExactArgs(3)),
		RunE: func(c *cobra.Command, a []string) error {
			ns, key := a[0], a[1]
			if err := checkItemArgs(ns, key); err != nil {
				return err
			}
			if ttl < 0 {
				return cli.Usage("give a positive duration such as 90s or 24h, or none for an item that never expires", "--ttl %s is negative", ttl)
			}
			mem, lbl, err := openMemoryLabels(c.Context(), app, labels)
			if err != nil {
				return err
			}
			defer mem.Close()
			it, err := mem.Put(c.Context(), longterm.Item{Namespace: ns, Key: key, Value: jsonValue(a[2]), Text: text, Labels: lbl},
				longterm.PutOptions{TTL: ttl})
			if err != nil {
				return cli.MemoryFail("put "+ns+" "+key, err)
			}
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, jsonItem(*it))
			}
			app.Printf("put %s %s (version %d", it.Namespace, it.Key, it.Version)
			if !it.ExpiresAt.IsZero() {
				app.Printf(", expires %s", it.ExpiresAt.Local().Format(time.RFC3339))
			}
			app.Printf(")\n")
			return nil
		},
	}
	c.Flags().StringVar(&text, "text", "", "the text that search matches (default: the value's keys and scalars)")
	c.Flags().DurationVar(&ttl, "ttl", 0, "expire the item this long after the put (90s, 24h); 0: never")
	c.Flags().StringArrayVar(&labels, "label", nil, "a label, NAME=VALUE (repeatable)")
	return c
}

func newMemoryGetCmd(app *cli.App) *cobra.Command {
	c := &cobra.Command{
		Use:   "get NAMESPACE KEY",
		Short: "Show a long-term memory item",
		Long: `Show the item under NAMESPACE and KEY: its value, text, labels, version,
times and the session it came from. --json prints the whole item.`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(c *cobra.Command, a []string) error {
			ns, key := a[0], a[1]
			if err := checkItemArgs(ns, key); err != nil {
				return err
			}
			mem, _, err := app.OpenMemory(c.Context())
			if err != nil {
				return err
			}
			defer mem.Close()
			it, err := mem.Get(c.Context(), ns, key)
			if err != nil {
				return cli.MemoryFail("get "+ns+" "+key, err)
			}
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, jsonItem(*it))
			}
			return writeItem(app.Stdout, it, time.Now())
		},
	}
	return c
}

// writeItem writes an item for people, a field a line.
func writeItem(w io.Writer, it *longterm.Item, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "namespace:\t%s\n", it.Namespace)
	fmt.Fprintf(tw, "key:\t%s\n", it.Key)
	fmt.Fprintf(tw, "value:\t%s\n", it.Value)
	if it.Text != "" {
		fmt.Fprintf(tw, "text:\t%s\n", it.Text)
	}
	if len(it.Labels) > 0 {
		fmt.Fprintf(tw, "labels:\t%s\n", cli.Labels(it.Labels))
	}
	fmt.Fprintf(tw, "version:\t%d\n", it.Version)
	fmt.Fprintf(tw, "created:\t%s (%s)\n", it.CreatedAt.Local().Format(time.RFC3339), cli.Ago(it.CreatedAt, now))
	fmt.Fprintf(tw, "updated:\t%s (%s)\n", it.UpdatedAt.Local().Format(time.RFC3339), cli.Ago(it.UpdatedAt, now))
	if !it.ExpiresAt.IsZero() {
		fmt.Fprintf(tw, "expires:\t%s\n", it.ExpiresAt.Local().Format(time.RFC3339))
	}
	if it.Source.Session != "" {
		fmt.Fprintf(tw, "source:\tsession %s seq %d (cairn sessions show %s)\n", it.Source.Session, it.Source.Seq, it.Source.Session)
	}
	return tw.Flush()
}

// memoryResult is a search result as --json prints it.
type memoryResult struct {
	Item        longterm.Item `json:"item"`
	Score       float64       `json:"score"`
	TextScore   float64       `json:"text_score"`
	VectorScore float64       `json:"vector_score,omitempty"`
}

func newMemorySearchCmd(app *cli.App) *cobra.Command {
	var (
		prefix string
		labels []string
		limit  int
	)
	c := &cobra.Command{
		Use:   "search QUERY [--ns PREFIX] [--label NAME=VALUE]... [--limit N]",
		Short: "Search long-term memory by text, best first",
		Long: `Search the items' texts for the words of QUERY, best first (BM25): an item
matches when it holds any word, and ranks higher the more it holds and the
rarer they are. Each word is matched as a phrase of its parts, so
teal-otter-17 matches exactly that; nothing in QUERY is syntax.

--ns keeps the items of a namespace and those under it (users/ada holds
users/ada/notes, not users/adam); --label keeps those with a label.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			if err := checkPrefixAndLimit(prefix, limit, longterm.MaxSearchLimit, "a number of results"); err != nil {
				return err
			}
			mem, lbl, err := openMemoryLabels(c.Context(), app, labels)
			if err != nil {
				return err
			}
			defer mem.Close()
			res, err := mem.Search(c.Context(), longterm.SearchOptions{Query: a[0], Prefix: prefix, Labels: lbl, Limit: limit, Mode: longterm.ModeText})
			if err != nil {
				return cli.MemoryFail(fmt.Sprintf("search %q", a[0]), err)
			}
			if app.Flags.JSON {
				out := make([]memoryResult, 0, len(res))
				for _, r := range res {
					out = append(out, memoryResult{Item: jsonItem(r.Item), Score: r.Score, TextScore: r.TextScore, VectorScore: r.VectorScore})
				}
				return cli.WriteJSON(app.Stdout, out)
			}
			if len(res) == 0 {
				app.Notef("no memory matches %q", a[0])
				return nil
			}
			tw := tabwriter.NewWriter(app.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SCORE\tNAMESPACE\tKEY\tTEXT")
			for _, r := range res {
				fmt.Fprintf(tw, "%.2f\t%s\t%s\t%s\n", r.Score, r.Item.Namespace, r.Item.Key, cli.OneLine(itemText(r.Item), 60))
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&prefix, "ns", "", "only the items of this namespace and those under it")
	c.Flags().StringArrayVar(&labels, "label", nil, "only the items with this label, NAME=VALUE (repeatable)")
	c.Flags().IntVar(&limit, "limit", longterm.DefaultSearchLimit, "the most results")
	return c
}

// itemText is what a table shows of an item: its text, else its value.
func itemText(it longterm.Item) string {
	if it.Text != "" {
		return it.Text
	}
	return string(it.Value)
}

func newMemoryListCmd(app *cli.App) *cobra.Command {
	var (
		prefix     string
		labels     []string
		limit      int
		cursor     string
		namespaces bool
		depth      int
	)
	c := &cobra.Command{
		Use:     "list [--ns PREFIX] [--namespaces [--depth N]] [--label NAME=VALUE]...",
		Aliases: []string{"ls"},
		Short:   "List long-term memory items, or namespaces",
		Long: `List the items under --ns (every namespace without it), a namespace then
those under it, then by key, a page at a time (--limit, 100 by default).
--namespaces lists the namespaces that hold items instead; --depth N cuts
them to their first N segments (--depth 1: users, agents, …).

When there are more, a last line on stderr gives the command for the next
page (--cursor); under --json, stdout stays one JSON array and the next
page's cursor is a JSON record on stderr with a "next_cursor" field.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := checkPrefixAndLimit(prefix, limit, longterm.MaxListLimit, "a page size"); err != nil {
				return err
			}
			if depth < 0 {
				return cli.Usage("give --depth 1 or more, or none for whole namespaces", "--depth %d is negative", depth)
			}
			if depth > 0 && !namespaces {
				return cli.Usage("add --namespaces", "--depth applies to --namespaces only")
			}
			if namespaces && len(labels) > 0 {
				return cli.Usage("drop --label, or list items", "--label applies to items, not to --namespaces")
			}
			mem, lbl, err := openMemoryLabels(c.Context(), app, labels)
			if err != nil {
				return err
			}
			defer mem.Close()
			what := "items"
			var next string
			if namespaces {
				what = "namespaces"
				page, err := mem.Namespaces(c.Context(), longterm.NamespaceOptions{Prefix: prefix, Depth: depth, Limit: limit, Cursor: cursor})
				if err != nil {
					return memoryListFail("list namespaces", cursor, err)
				}
				next = page.Next
				switch {
				case app.Flags.JSON:
					if page.Namespaces == nil {
						page.Namespaces = []string{}
					}
					if err := cli.WriteJSON(app.Stdout, page.Namespaces); err != nil {
						return err
					}
				case len(page.Namespaces) == 0:
					app.Notef("no namespace holds memory%s", under(prefix))
				default:
					for _, ns := range page.Namespaces {
						app.Printf("%s\n", ns)
					}
				}
			} else {
				page, err := mem.List(c.Context(), longterm.ListOptions{Prefix: prefix, Labels: lbl, Limit: limit, Cursor: cursor})
				if err != nil {
					return memoryListFail("list memory", cursor, err)
				}
				next = page.Next
				switch {
				case app.Flags.JSON:
					out := make([]longterm.Item, 0, len(page.Items))
					for _, it := range page.Items {
						out = append(out, jsonItem(it))
					}
					if err := cli.WriteJSON(app.Stdout, out); err != nil {
						return err
					}
				case len(page.Items) == 0:
					app.Notef("no memory%s; `cairn memory put NAMESPACE KEY VALUE` adds some", under(prefix))
				default:
					now := time.Now()
					tw := tabwriter.NewWriter(app.Stdout, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "NAMESPACE\tKEY\tVERSION\tUPDATED\tTEXT")
					for _, it := range page.Items {
						fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", it.Namespace, it.Key, it.Version, cli.Ago(it.UpdatedAt, now), cli.OneLine(itemText(it), 50))
					}
					if err := tw.Flush(); err != nil {
						return err
					}
				}
			}
			if next != "" {
				if app.Flags.JSON {
					app.Logger().Info("more "+what+": give --cursor for the next page", "next_cursor", next)
				} else {
					app.Notef("more %s: add --cursor %s for the next %d", what, next, limit)
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&prefix, "ns", "", "only this namespace and those under it")
	c.Flags().BoolVar(&namespaces, "namespaces", false, "list the namespaces that hold items, not the items")
	c.Flags().IntVar(&depth, "depth", 0, "with --namespaces: cut namespaces to their first N segments")
	c.Flags().StringArrayVar(&labels, "label", nil, "only the items with this label, NAME=VALUE (repeatable)")
	c.Flags().IntVar(&limit, "limit", longterm.DefaultListLimit, "items per page")
	c.Flags().StringVar(&cursor, "cursor", "", "start after the page that gave this cursor")
	return c
}

func under(prefix string) string {
	if prefix == "" {
		return ""
	}
	return " under " + prefix
}

func memoryListFail(what, cursor string, err error) error {
	if cursor != "" && strings.Contains(err.Error(), "cursor") {
		return cli.Usage("give the cursor a previous `cairn memory list` printed, unchanged, with the same --ns", "--cursor %q: %v", cursor, err)
	}
	return cli.MemoryFail(what, err)
}

func newMemoryDeleteCmd(app *cli.App) *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:     "delete NAMESPACE [KEY]",
		Aliases: []string{"rm"},
		Short:   "Erase a long-term memory item, or a whole namespace",
		Long: `Erase the item under NAMESPACE and KEY: its value, text, index entries
and vector. Without KEY, erase every item of NAMESPACE and of the
namespaces under it (users/ada erases users/ada/notes too, not users/adam):
at a terminal cairn asks first; --yes skips the question, and without a
terminal (a script) --yes is required.`,
		Args: args(cobra.RangeArgs(1, 2)),
		RunE: func(c *cobra.Command, a []string) error {
			ns := a[0]
			if err := checkNamespaceArg(ns); err != nil {
				return err
			}
			if len(a) == 2 {
				key := a[1]
				if err := checkKeyArg(key); err != nil {
					return err
				}
				mem, _, err := app.OpenMemory(c.Context())
				if err != nil {
					return err
				}
				defer mem.Close()
				if err := mem.Delete(c.Context(), ns, key, 0); err != nil {
					return cli.MemoryFail("delete "+ns+" "+key, err)
				}
				if app.Flags.JSON {
					return cli.WriteJSON(app.Stdout, map[string]any{"namespace": ns, "key": key, "deleted": 1})
				}
				app.Printf("deleted %s %s\n", ns, key)
				return nil
			}
			if !yes && !cli.IsTerminal(app.Stdin) {
				return cli.Usage("add --yes to erase without a question (scripts), or run it at a terminal",
					"delete %s: not erasing a whole namespace without confirmation, and there is no terminal to ask on", ns)
			}
			mem, _, err := app.OpenMemory(c.Context())
			if err != nil {
				return err
			}
			defer mem.Close()
			if !yes {
				fmt.Fprintf(app.Stderr, "Erase every memory under %s for good? [y/N] ", ns)
				answer, _ := bufio.NewReader(app.Stdin).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
					fmt.Fprintln(app.Stderr, "kept", ns)
					return nil
				}
			}
			n, err := mem.DeleteNamespace(c.Context(), ns)
			if err != nil {
				return cli.MemoryFail("delete "+ns, err)
			}
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, map[string]any{"namespace": ns, "deleted": n})
			}
			app.Printf("deleted %d item%s under %s\n", n, plural(n), ns)
			return nil
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return c
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
