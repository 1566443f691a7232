package cli

import "golang.org/x/sys/unix"

// ioctlReadTermios reads a terminal's attributes (TCGETS is Linux's name).
const ioctlReadTermios = unix.TIOCGETA
