package cli

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"
)

// helpCommand is `segfs help [COMMAND]`, in place of urfave/cli's: that
// one answered `segfs help help` with its own generic text ("Shows a list
// of commands or help for one command", a usage line without segfs),
// `segfs help nosuch` with "No help topic for 'nosuch'", and ignored
// arguments past the first.
func helpCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "help",
		Usage:     "list the commands, or explain one",
		ArgsUsage: "[COMMAND]",
		Description: `Without COMMAND, prints what "segfs --help" prints: the commands. With
COMMAND, prints what "segfs COMMAND --help" prints: its usage, what it does,
its flags and an example.

Example:

   segfs help mount`,
		// "help --help" reaches Action as an argument: urfave/cli answers
		// a parsed --help itself, and for help with the list of commands.
		SkipFlagParsing: true,
		Action: func(c *ucli.Context) error {
			args := c.Args().Slice()
			if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
				args[0] = "help"
			}
			switch {
			case len(args) == 0:
				return ucli.ShowAppHelp(c)
			case len(args) > 1:
				return fmt.Errorf("help: want one COMMAND at most, not %d arguments (usage: segfs help [COMMAND])", len(args))
			case c.App.Command(args[0]) == nil:
				return fmt.Errorf("unknown command %q (see segfs --help)", args[0])
			}
			return ucli.ShowCommandHelp(c, args[0])
		},
	}
}
