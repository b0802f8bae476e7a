// Command benchtool holds the measuring pieces of scripts/bench.sh that a
// shell cannot do well: generating input, timing lookups one by one,
// Kafka clients (franz-go) and a kfake cluster, a plain sendfile peer, a
// CRC scan, and the final table. Each subcommand prints its figures on one
// line, space-separated, for the script to record.
//
//	benchtool gen FILE LINES LINELEN
//	benchtool lookup PARTDIR RUNS_N MAXN T0 T1       offset/N and time/T latencies
//	benchtool statmany PARTDIR COUNT                 lstat offset/0..COUNT-1
//	benchtool openmany PID FILE...                   hold FILEs open, print PID's RSS
//	benchtool crcscan FILE                           validate every batch
//	benchtool sendfile FILE...                       plain sendfile over loopback
//	benchtool kfake ADDR                             run a kfake cluster
//	benchtool fill ADDR TOPIC FILE                   produce FILE's lines
//	benchtool consume ADDR TOPIC COUNT               franz-go consumer
//	benchtool produce ADDR TOPIC COUNT SIZE          franz-go producer, acks=all
//	benchtool rawfetch ADDR TOPIC                    Fetch v11 requests by hand
//	benchtool report RESULTS NOTES OUT               the table (Markdown)
package main

import (
	"fmt"
	"os"
	"strconv"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtool COMMAND ARGS (see the source)")
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{
		"gen":            cmdGen,
		"lookup":         cmdLookup,
		"statmany":       cmdStatMany,
		"openmany":       cmdOpenMany,
		"crcscan":        cmdCRCScan,
		"sendfile":       cmdSendfile,
		"sendfile-serve": cmdSendfileServe,
		"kfake":          cmdKfake,
		"fill":           cmdFill,
		"consume":        cmdConsume,
		"produce":        cmdProduce,
		"rawfetch":       cmdRawFetch,
		"report":         cmdReport,
		"median":         cmdMedian,
	}
	f, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "benchtool: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := f(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "benchtool %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func atoi(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchtool: %q is not a number\n", s)
		os.Exit(2)
	}
	return v
}

func need(args []string, n int, usage string) error {
	if len(args) < n {
		return fmt.Errorf("usage: %s", usage)
	}
	return nil
}
