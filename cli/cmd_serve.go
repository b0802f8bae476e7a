package cli

import ucli "github.com/urfave/cli/v2"

// STUB owned by the fetch engineer.
func serveCommand() *ucli.Command {
	return &ucli.Command{Name: "serve", Usage: "serve a data directory over the Kafka protocol"}
}
