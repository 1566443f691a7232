package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/store/crypt"
)

func newRekeyCmd(app *cli.App) *cobra.Command {
	var newKey string
	c := &cobra.Command{
		Use:   "rekey --new-key FILE",
		Short: "Wrap every data key (sessions' and long-term memory's) by a new encryption key",
		Long: `Rotate the encryption key of an encrypted store. Each session's events are
sealed with a data key of its own, stored wrapped by the master key (the
configured persistence.encryption_key_file). rekey wraps every data key by
the key in FILE too, and so the keys of the store's long-term memory (its
text index's and each namespace's); no event or item is rewritten.
Afterwards point the config at
FILE: the store reads with the new key alone, and once the old key file is
destroyed, nothing wrapped by it (earlier wrappings, backups) can be read.
Running it again after an interruption picks up where it stopped.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			if newKey == "" {
				return cli.Usage("see `cairn sessions rekey --help`", "rekey: --new-key FILE is required")
			}
			cfg, err := app.Config()
			if err != nil {
				return err
			}
			if cfg.Persistence.EncryptionKeyFile == "" {
				return cli.Usage(cli.KeyHint, "rekey: no encryption key is configured; the store's current key is needed to rewrap its data keys")
			}
			old, err := crypt.LoadKeyFile(cfg.Persistence.EncryptionKeyFile)
			if err != nil {
				return cli.Fail(fmt.Errorf("rekey: current key: %w", err), cli.KeyHint)
			}
			next, err := crypt.LoadKeyFile(newKey)
			if err != nil {
				return cli.Fail(fmt.Errorf("rekey: new key: %w", err), "make one with: head -c 32 /dev/urandom | base64 > new.key")
			}
			ring, err := crypt.NewKeyring(next, old)
			if err != nil {
				return cli.Fail(fmt.Errorf("rekey: %w", err), "give the new key an id of its own (ID:base64 in the file)")
			}
			opts, err := app.StoreOptions()
			if err != nil {
				return err
			}
			u := cfg.StoreURL()
			store, err := crypt.Open(c.Context(), u, opts, ring)
			if err != nil {
				return cli.Fail(fmt.Errorf("open store %s: %w", text.RedactURL(u), err), "`cairn doctor` checks the store")
			}
			defer store.Close()
			bar := cli.NewProgress(app.Stderr, 0, "rekey")
			res, err := store.Rekey(c.Context(), func(done, total int) {
				if done == 1 {
					bar = cli.NewProgress(app.Stderr, total, "rekey")
				}
				bar.Set(done, "")
			})
			bar.Done()
			if errors.Is(err, crypt.ErrWrongKey) {
				return cli.Fail(err, "configure the namespace's current key (persistence.encryption_key_file or CAIRN_ENCRYPTION_KEY_FILE) and give the new one with --new-key")
			}
			if err != nil {
				return cli.Fail(err, "rerun rekey: it resumes where it stopped")
			}
			mem, err := rekeyMemory(c.Context(), app, u, opts.Namespace, ring)
			if err != nil {
				return err
			}
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, map[string]any{"store": text.RedactURL(u), "old_key": old.ID, "new_key": next.ID,
					"sessions": res.Sessions, "rewrapped": res.Rewrapped, "already": res.Current,
					"memory": map[string]int{"keys": mem.Keys, "rewrapped": mem.Rewrapped, "already": mem.Current}})
			}
			app.Printf("rewrapped %d of %d session keys by key %s (%d already were)\n", res.Rewrapped, res.Sessions, next.ID, res.Current)
			app.Printf("rewrapped %d of %d long-term memory keys (%d already were)\n", mem.Rewrapped, mem.Keys, mem.Current)
			app.Notef("now set persistence.encryption_key_file (or CAIRN_ENCRYPTION_KEY_FILE) to %s; then destroy the old key file", newKey)
			return nil
		},
	}
	c.Flags().StringVar(&newKey, "new-key", "", "file holding the new key (32 random bytes, base64 or hex)")
	return c
}

// rekeyMemory wraps the keys of the long-term memory at u (the sessions'
// store URL; the memory of namespace ns where the backend keeps one per
// namespace) by ring's current key.
func rekeyMemory(ctx context.Context, app *cli.App, u, ns string, ring *crypt.Keyring) (crypt.LongTermRekeyResult, error) {
	lt, err := crypt.OpenLongTerm(ctx, u, longterm.Options{Namespace: ns}, ring)
	if err != nil {
		return crypt.LongTermRekeyResult{}, cli.Fail(fmt.Errorf("open memory store %s: %w", text.RedactURL(u), err), "the session keys were rewrapped; `cairn doctor` checks the store, then rerun rekey for the memory's keys")
	}
	defer lt.Close()
	bar := cli.NewProgress(app.Stderr, 0, "rekey memory")
	res, err := lt.Rekey(ctx, func(done, total int) {
		if done == 1 {
			bar = cli.NewProgress(app.Stderr, total, "rekey memory")
		}
		bar.Set(done, "")
	})
	bar.Done()
	if errors.Is(err, crypt.ErrUnknownKey) {
		return res, cli.Fail(err, "the session keys were rewrapped; configure the key the long-term memory was written with and rerun rekey")
	}
	if err != nil {
		return res, cli.Fail(err, "the session keys were rewrapped; rerun rekey: it resumes where it stopped")
	}
	return res, nil
}
