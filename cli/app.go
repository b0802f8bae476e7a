// Package cli holds segfs's commands (github.com/urfave/cli/v2). Each
// command lives in its own cmd_*.go file and returns errors; only main exits.
package cli

import (
	"context"

	ucli "github.com/urfave/cli/v2"
)

// App builds the command tree.
func App() *ucli.App {
	return &ucli.App{
		Name:  "segfs",
		Usage: "Kafka partition logs as files",
		Commands: []*ucli.Command{
			mountCommand(),
			serveCommand(),
		},
	}
}

// Run runs the command line args (args[0] is the program name).
func Run(ctx context.Context, args []string) error {
	return App().RunContext(ctx, args)
}
