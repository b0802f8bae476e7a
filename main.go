// Command segfs mounts Kafka-format partition logs as files and serves them
// over the Kafka protocol. All behaviour lives in package cli.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/segfs/segfs/cli"
)

func main() {
	if err := cli.Run(context.Background(), os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "segfs:", err)
		os.Exit(1)
	}
}
