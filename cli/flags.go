package cli

import (
	"fmt"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// jsonFlag selects machine-readable output for the listing commands.
func jsonFlag() ucli.Flag {
	return &ucli.BoolFlag{Name: "json", Usage: "print JSON instead of text"}
}

// rejectLateFlags catches a flag written after the positional arguments
// ("segfs dump-log x.log --deep-iteration"). urfave/cli v2 stops parsing
// flags at the first argument, so without this check the flag would be
// taken for a file name and fail with a confusing "no such file".
func rejectLateFlags(args []string) error {
	for _, a := range args {
		if strings.HasPrefix(a, "-") && a != "-" {
			return fmt.Errorf("flag %q must come before the arguments", a)
		}
	}
	return nil
}

// rejectEmptyArgs refuses an empty positional argument. filepath.Abs("")
// is the working directory, so `segfs mount "$DATA" /mnt/segfs` with DATA
// unset would otherwise lock and fill whatever directory the shell is in.
func rejectEmptyArgs(args, names []string) error {
	for i, a := range args {
		if a == "" && i < len(names) {
			return fmt.Errorf("%s is an empty string", names[i])
		}
	}
	return nil
}
