package cli

import ucli "github.com/urfave/cli/v2"

// STUB owned by the fs engineer.
func mountCommand() *ucli.Command {
	return &ucli.Command{Name: "mount", Usage: "mount a data directory"}
}
