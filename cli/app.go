// Package cli holds segfs's commands (github.com/urfave/cli/v2). Each
// command lives in its own cmd_*.go file and returns errors; only main exits.
package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	ucli "github.com/urfave/cli/v2"
)

// Version is the release version, set at link time
// (-ldflags "-X github.com/segfs/segfs/cli.Version=v1.2.3"). When empty,
// --version reports the module version and VCS revision the Go toolchain
// recorded in the binary.
var Version = ""

// version renders what --version prints after "segfs version ".
func version() string {
	v := Version
	info, ok := debug.ReadBuildInfo()
	if v == "" {
		v = "devel"
		if ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
	}
	if ok {
		var rev, dirty string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			v += " (" + rev + dirty + ")"
		}
	}
	return v + " " + runtime.Version()
}

// App builds the command tree.
func App() *ucli.App {
	app := &ucli.App{
		Name:    "segfs",
		Usage:   "Kafka partition logs as files",
		Version: version(),
		Description: `segfs keeps Kafka-format partition logs in a data directory, mounts them
as a FUSE filesystem (append with >>, follow with tail -f, jump by offset or
time) and serves them to Kafka clients. The offline tools (dump-log, verify,
get-offsets, log-dirs) read a data directory or segment files directly and
work beside a running mount.

Example:

   mkdir -p /mnt/segfs && segfs mount ~/.segfs/data /mnt/segfs
   mkdir /mnt/segfs/orders && echo hello >> /mnt/segfs/orders/0/data`,
		Commands: []*ucli.Command{
			mountCommand(),
			serveCommand(),
			dumpLogCommand(),
			verifyCommand(),
			getOffsetsCommand(),
			logDirsCommand(),
			helpCommand(),
		},
		// urfave/cli adds --help only along with its own help command,
		// which helpCommand replaces.
		Flags: []ucli.Flag{ucli.HelpFlag},
		Before: func(*ucli.Context) error {
			raiseFileLimit()
			return nil
		},
		// Commands return errors and main decides the exit status; this
		// keeps urfave/cli from calling os.Exit for an ExitCoder error.
		ExitErrHandler: func(*ucli.Context, error) {},
		OnUsageError:   usageError(""),
		// Without a command, the help; with one that does not exist, an
		// error naming it. urfave/cli's default answered "segfs mont"
		// with "No help topic for 'mont'", as if help had been asked for.
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("unknown command %q (see segfs --help)", c.Args().First())
			}
			return ucli.ShowAppHelp(c)
		},
	}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = usageError(cmd.Name)
		// No hidden "help" subcommand: with urfave/cli's, "segfs verify
		// help" printed verify's help instead of checking the data
		// directory ./help ("h" too, and "segfs mount h MNT" answered
		// "No help topic for 'MNT'"). --help explains the command.
		cmd.HideHelpCommand = true
	}
	return app
}

// usageError turns a flag that does not parse into the command's error,
// which main prints as one line on stderr. urfave/cli's default printed
// "Incorrect Usage" and the whole help to stdout, and main then printed
// the error again: a script saw the help text as the command's output.
func usageError(command string) ucli.OnUsageErrorFunc {
	return func(_ *ucli.Context, err error, _ bool) error {
		if command == "" {
			return fmt.Errorf("%w (see segfs --help)", err)
		}
		return fmt.Errorf("%s: %w (see segfs %s --help)", command, err, command)
	}
}

// Run runs the command line args (args[0] is the program name).
func Run(ctx context.Context, args []string) error {
	return App().RunContext(ctx, args)
}

// RunIO is Run with the commands' output sent to stdout and stderr, for
// tests that run commands in-process.
func RunIO(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	app := App()
	app.Writer, app.ErrWriter = stdout, stderr
	return app.RunContext(ctx, args)
}
