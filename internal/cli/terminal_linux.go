package cli

import "golang.org/x/sys/unix"

// ioctlReadTermios reads a terminal's attributes.
const ioctlReadTermios = unix.TCGETS
