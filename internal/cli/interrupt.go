package cli

// OnInterrupt makes f decide what a Ctrl+C (SIGINT) does until the
// returned function is called: f reports whether it dealt with it (a chat
// cancels the turn under way); when it did not, or no f is set, the
// command's context is cancelled, as for SIGTERM.
func (a *App) OnInterrupt(f func() bool) (restore func()) {
	a.intMu.Lock()
	prev := a.onInterrupt
	a.onInterrupt = f
	a.intMu.Unlock()
	return func() {
		a.intMu.Lock()
		a.onInterrupt = prev
		a.intMu.Unlock()
	}
}

// HandleInterrupt is called by main on each SIGINT; it reports whether the
// interrupt was dealt with, so that the command goes on.
func (a *App) HandleInterrupt() bool {
	a.intMu.Lock()
	f := a.onInterrupt
	a.intMu.Unlock()
	return f != nil && f()
}
